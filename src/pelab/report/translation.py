"""The translation study's section of the report: BLEU and chrF per scheme with sacreBLEU's paired bootstrap
(``pelab.analysis.bootstrap``), BLEU by source length, loss curves, NLTK BLEU beside the reference report, examples,
cost."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from pelab import io
from pelab.analysis.bootstrap import RESAMPLES
from pelab.analysis.paired import reference_tests, seed_map, seed_summary
from pelab.positional import is_control
from pelab.report.analyses.anchors import ANCHORS
from pelab.report.context import ReportContext
from pelab.report.copy import choices
from pelab.report.render import fill, render
from pelab.report.style import draw_curves, save, scheme_palette
from pelab.report.tables import comparison_table, cost_table, difference_matrix, format_p, markdown_table
from pelab.stats import format_mean_sd

TASK = "translation"
BLEU_BY_LENGTH, LOSS = "translation_bleu_by_length.png", "translation_loss_curves.png"

# The reference report's NLTK "BLEU-4" (IWSLT2017 fr-en, best of three runs, raw strings -> character n-grams).
REFERENCE_NLTK = {a.scheme: a.published for a in ANCHORS if a.metric == "nltk_char_bleu_beam"}
CORPORA = {"multi30k": "Multi30k task 1 (Elliott et al. 2016/2017)", "iwslt2017": "IWSLT 2017 fr-en (TED talks)"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _mean(records: pd.DataFrame, scheme: str, split: str, metric: str) -> dict[str, float]:
    return seed_summary(records, TASK, scheme, split, metric)


def _reading(records: pd.DataFrame, schemes: list[str], split: str, best: str, reference: str) -> str:
    """Sentences from the numbers: the highest mean, each scheme against the declared reference, the control."""
    key, tests = "bleu_beam", {}
    if reference in schemes:
        tests = reference_tests(records, TASK, schemes, reference, split, key)
    consistent = [s for s, t in tests.items() if t["p"] <= t["min_p"] + 1e-12]
    named = lambda group: ", ".join(f"`{s}` ({tests[s]['mean_diff']:+.2f})" for s in group)  # noqa: E731
    return fill("translation_reading.md", split=split, best=best, reference=reference,
                best_mean=format_mean_sd(_mean(records, best, split, key), 2), consistent=named(consistent),
                min_p=format_p(tests[consistent[0]]["min_p"]) if consistent else "",
                n=tests[consistent[0]]["n"] if consistent else 0,
                mixed=named([s for s in tests if s not in consistent]),
                controls=[(s, _mean(records, best, split, key)["mean"] - _mean(records, s, split, key)["mean"])
                          for s in schemes if is_control(s) and s != best])


def _paired_bootstrap(records: pd.DataFrame, schemes: list[str], seeds: list[int], split: str, reference: str) -> str:
    """sacreBLEU's paired bootstrap of every scheme against the reference, once per seed, as the aggregate stage
    recorded it (``pelab.tasks.translation.paired``): the table, or "" where a scheme or seed has none."""
    found = records[(records["task"] == TASK) & (records["split"] == split) & (records["metric"] == "bootstrap_p")]
    if reference not in schemes or len(found) != (len(schemes) - 1) * len(seeds):
        return ""
    rows = []
    for scheme in (s for s in schemes if s != reference):
        delta, p = (seed_map(records, TASK, scheme, split, m) for m in ("bootstrap_delta_bleu", "bootstrap_p"))
        better, worse = (sum(p[k] < 0.05 and sign * delta[k] > 0 for k in seeds) for sign in (1, -1))
        rows.append([f"`{scheme}`", *(f"{delta[k]:+.2f} (p={format_p(p[k])})" for k in seeds), f"{better} / {worse}"])
    header = ["scheme", *[f"seed {k}: ΔBLEU (p)" for k in seeds], "seeds p < 0.05: better / worse"]
    return markdown_table(header, rows)


def _nltk_table(records: pd.DataFrame, schemes: list[str], split: str) -> str:
    header = ["scheme", "sacreBLEU", "NLTK corpus_bleu, 13a word tokens (×100)",
              "NLTK corpus_bleu on raw strings = characters (×100)", "reference report (its NLTK ×100)"]
    rows = []
    for scheme in schemes:
        ref = REFERENCE_NLTK.get(scheme)
        rows.append([
            f"`{scheme}`",
            format_mean_sd(_mean(records, scheme, split, "bleu_beam"), 2),
            format_mean_sd(_mean(records, scheme, split, "nltk_bleu_beam"), 2),
            format_mean_sd(_mean(records, scheme, split, "nltk_char_bleu_beam"), 2),
            "–" if ref is None else f"{100 * ref:.2f} (IWSLT2017)",
        ])
    return markdown_table(header, rows)


def _examples(ctx: ReportContext, schemes: list[str], seed: int) -> list[dict]:
    """The same sources for every scheme: source, reference, then each scheme's beam output (one seed)."""
    by_index: dict[int, dict] = {}
    for scheme in schemes:
        path = ctx.result_path(TASK, scheme, seed) / "examples.jsonl"
        if not path.exists():
            continue
        for row in io.read_jsonl(path):
            entry = by_index.setdefault(row["index"], {**row, "outputs": {}})
            entry["outputs"][scheme] = row
    return [{**entry, "table": markdown_table(
                ["scheme", f"beam search (seed {seed})", "greedy"],
                [[f"`{s}`", _cell(out["beam"]) or "(empty)", _cell(out["greedy"]) or "(empty)"]
                 for s, out in entry["outputs"].items()])}
            for _, entry in sorted(by_index.items())]


def _decode_cost(records: pd.DataFrame, schemes: list[str], split: str, sentences: dict) -> str:
    header = ["scheme", f"greedy, {sentences.get('greedy', '?')} sentences (s)",
              f"beam, {sentences.get('beam', '?')} sentences (s)"]
    rows = [[f"`{s}`"] + [f"{_mean(records, s, split, f'decode_time_s_{d}')['mean']:.1f}" for d in ("greedy", "beam")]
            for s in schemes]
    return markdown_table(header, rows)


def section(ctx: ReportContext) -> list[str]:
    """Markdown lines of the translation section (empty if there are no translation records); writes its
    figures into ``ctx.figures_dir``."""
    if not ctx.has_task(TASK):
        return []
    params, records, curves = ctx.params, ctx.records, ctx.curves
    cfg = ctx.cfg(TASK)
    schemes, seeds = list(params.schemes_of(TASK)), list(params.seeds)  # its own list where it has one
    meta_path = ctx.result_path(TASK, schemes[0], seeds[0]) / "eval_meta.json"
    meta = io.read_json(meta_path) if meta_path.exists() else {}
    splits = meta.get("eval_splits") or sorted(records[(records["task"] == TASK)
                                                       & records["split"].str.startswith("test")]["split"].unique())
    first = splits[0]
    run_meta = ctx.run_meta(TASK, schemes[0], seeds[0])
    draw_bleu_by_length(records, schemes, splits, meta.get("length_buckets") or [], ctx.figure(BLEU_BY_LENGTH))
    draw_curves(curves[curves["task"] == TASK], schemes, [("loss", "training loss (label-smoothed)"),
                                                     ("val_loss", "validation cross-entropy per token")],
                ctx.figure(LOSS))
    columns = [(first, "bleu_beam", f"BLEU {first}, beam"), (first, "chrf_beam", "chrF, beam"),
               (first, "bleu_greedy", "BLEU, greedy")]
    columns += [(s, "bleu_beam", f"BLEU {s}, beam") for s in splits[1:]]
    table, best = comparison_table(records, TASK, schemes, columns, digits=2, reference=params.reference)
    devices = {s: ctx.run_meta(TASK, s, seeds[0])["cost"]["device"] for s in schemes}
    return render(
        "translation.md", profile=params.profile, corpus=CORPORA.get(cfg.data.corpus, cfg.data.corpus), data=cfg.data,
        eval_splits_set=cfg.eval.splits is not None, splits=splits, first=first, m=cfg.model, t=cfg.train,
        d=cfg.eval.decode, vocab=run_meta["info"].get("vocab_size", "?"),
        epochs=run_meta["cost"].get("epochs", float("nan")), n_seeds=len(seeds), reference=params.reference,
        choices=choices(ctx, TASK, cfg.data.max_tokens, cfg.data.max_tokens + 1),  # a target row: <s> + tokens
        signatures=meta.get("signatures", {}), table=table, reading=_reading(records, schemes, first, best,
                                                                            params.reference),
        matrix=difference_matrix(records, TASK, schemes, first, "bleu_beam", digits=2), image=ctx.image,
        by_length=BLEU_BY_LENGTH, loss=LOSS, resamples=RESAMPLES,
        bootstrap=_paired_bootstrap(records, schemes, seeds, first, params.reference),
        nltk_table=_nltk_table(records, schemes, first),
        examples=_examples(ctx, schemes, seeds[0]),
        cost=cost_table(records, TASK, schemes, devices),
        decode_cost=_decode_cost(records, schemes, first, meta.get("sentences", {}).get(first, {})))


def draw_bleu_by_length(
    records: pd.DataFrame, schemes: list[str], splits: list[str], buckets: list[str], path: Path,
    metric: str = "bleu_beam",
) -> Path:
    """Corpus BLEU of each source-length bucket: mean over seeds ± sd, one line per scheme, a panel per split."""
    palette = scheme_palette()
    rows = records[(records["task"] == TASK) & (records["metric"] == metric) & records["length"].isin(buckets)]
    fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for offset, scheme in enumerate(schemes):
            sel = rows[(rows["pe"] == scheme) & (rows["split"] == split)]
            stats = sel.groupby("length")["value"].agg(["mean", "std"]).reindex(buckets)
            x = [i + 0.06 * (offset - (len(schemes) - 1) / 2) for i in range(len(buckets))]
            ax.errorbar(x, stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=4, capsize=3, lw=1.2,
                        label=scheme, color=palette[scheme])
        ax.set_xticks(range(len(buckets)), buckets)
        ax.set_xlabel("source length (French words)")
        ax.set_title(split, fontsize=10)
    axes[0][0].set_ylabel(f"sacreBLEU, {metric.split('_')[-1]} search (mean ± sd over seeds)")
    axes[0][-1].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save(fig, path)
