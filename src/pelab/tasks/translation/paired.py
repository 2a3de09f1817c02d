"""sacreBLEU's paired bootstrap of each translation run against the reference scheme's run of its seed, from the
translations its evaluation wrote (``pelab.tasks.translation.evaluate``): what the aggregate stage adds to the records
through ``TranslationTask.paired_records`` and the report's translation section reads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pelab import io
from pelab.analysis.bootstrap import paired_bootstrap

TASK = "translation"


def bootstrap_records(schemes: Sequence[str], seeds: Sequence[int], reference: str,
                      results_root: Path) -> list[dict[str, Any]]:
    """sacreBLEU's paired bootstrap (``pelab.analysis.bootstrap``) of each translation scheme's beam translations
    against the reference scheme's, once per seed, on the first evaluated split, from the files its evaluation wrote
    (``pelab.tasks.translation.evaluate``): records ``bootstrap_delta_bleu`` (its BLEU minus the reference's) and
    ``bootstrap_p``. [] where the reference is not among the schemes or a run saved no beams or settings."""
    others = [s for s in schemes if s != reference]
    if reference not in schemes or not others:
        return []
    rows = []
    for seed in seeds:
        base = io.run_dir(results_root, TASK, reference, seed)
        meta = io.read_json(base / "eval_meta.json") if (base / "eval_meta.json").exists() else {}
        if not meta.get("eval_splits"):
            return []
        split = meta["eval_splits"][0]
        paths = {s: io.run_dir(results_root, TASK, s, seed) / "hyps" / f"{split}.beam.en" for s in schemes}
        if not all(path.exists() for path in paths.values()):
            return []
        beams = {s: path.read_text().splitlines() for s, path in paths.items()}
        refs = (base / "refs" / f"{split}.en").read_text().splitlines()
        tests = paired_bootstrap(beams[reference], {s: beams[s] for s in others}, refs[: len(beams[reference])])
        rows += [{"task": TASK, "pe": s, "seed": seed, "split": split, "length": "all", "metric": metric,
                  "value": value} for s, t in tests.items()
                 for metric, value in (("bootstrap_delta_bleu", t["bleu"] - t["baseline_bleu"]),
                                       ("bootstrap_p", t["p"]))]
    return rows
