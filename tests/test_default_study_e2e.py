"""The default study, end to end: `dvc repro` of the smoke profile with the default schemes (`pe=all`), every
task, two seeds, and the length study with the full profile's `length_tasks` and `length_schemes`, in a
temporary copy of the repository. Every stage of the pipeline must run, and the report and `dvc metrics show`
must name every scheme of every task. A scheme or task that breaks any stage of the default study fails here."""

from __future__ import annotations

import json

import pytest
from test_pipeline_e2e import copy_worktree, ran, run

from pelab.compose import compose_params
from pelab.studies import STUDIES
from pelab.tasks.length.data.problems import PROBLEMS

pytestmark = pytest.mark.e2e
SEEDS = 2  # the study's seeds here (the fixture's overrides)


@pytest.fixture(scope="module")
def study(repo_root, tmp_path_factory):
    full = compose_params(repo_root / "conf", [])  # the defaults: pe=all, every task, five seeds, profile full
    # two seeds, not the default five: every scheme and task, stacked and paired, within the suite's 25 minutes
    # (five made the suite 26:54 once recall joined the length study: benchmarks/results/suite_time.md)
    # every study's lists as the full profile holds them (from the records: a new study rides along by design)
    lists = [f"{key}=[{','.join(s.values(full, key))}]" for s in STUDIES[1:] for key in (s.tasks_key, s.schemes_key)]
    overrides = ["profile=smoke", "seeds=[0,1]", *lists,
                 # per-scheme learning rates for every length scheme (one stage, every scheme in it); the main study's
                 # and the LM's tune stages (one per scheme: copy's 20 took 2.6 minutes, the LM's 26 six,
                 # benchmarks/results/suite_time.md, 2026-11-28) run the same runner, tested on copy in test_tuning.py
                 f"tune.length_tasks=[{full['length_tasks'][0]}]"]
    dest = copy_worktree(repo_root, tmp_path_factory.mktemp("default_study") / "repo")
    run(["pelab", "compose", *overrides, "--out", "params.yaml"], dest)
    out = run(["dvc", "repro"], dest, timeout_s=None)  # the suite's longest test: benchmarks/results/suite_time.md
    return dest, full, out


def test_every_stage_of_the_default_study_runs(study):
    project, full, out = study
    stages = {line.split()[0].rsplit(":", 1)[-1]
              for line in run(["dvc", "stage", "list", "--all"], project).splitlines() if line.strip()}
    # from the study records: a run stage per (task, scheme), or per task where a stage runs every scheme of the list
    n_runs = sum(len(s.values(full, s.tasks_key)) * (len(s.values(full, s.schemes_key)) if s.per_scheme else 1)
                 for s in STUDIES)
    n_tuned = 1  # the length task's tune stage
    n_tasks = sum(len(s.values(full, s.tasks_key)) for s in STUDIES)  # a prepare stage each
    assert n_runs == 2 * 22 + 20 + 36  # the default study as it stands (a scheme or task added changes it here)
    assert len(stages) == n_tasks + n_runs + n_tuned + 3  # and check, aggregate, report
    assert ran(out, "") == stages


def test_every_length_scheme_is_ranked_at_its_tuned_rate(study):
    project, full, _ = study
    tuning = json.loads((project / "reports/tuning.json").read_text())
    tuned = {full["length_tasks"][0]: full["length_schemes"]}
    assert sorted(tuning["tasks"]) == sorted(tuned)
    report = (project / "reports/report.md").read_text()
    section = report[report.index("## Does the ranking survive per-scheme learning rates?"):]
    for task, schemes in tuned.items():
        table = tuning["tasks"][task]
        assert sorted(table["schemes"]) == sorted(schemes), task
        for scheme, entry in table["schemes"].items():
            assert entry["chosen_scale"] in (0.5, 1.0, 2.0) and len(entry["tuned"]["per_seed"]) == SEEDS
            assert entry["val_loss"][f"x{entry['chosen_scale']:g}"] == min(entry["val_loss"].values())
            assert (project / "runs/tuned" / task / scheme / f"seed_{SEEDS - 1}" / "model.pt").exists()
        assert f"**{task}**" in section


def test_the_report_and_metrics_name_every_scheme_of_every_task(study):
    project, full, _ = study
    shown = run(["dvc", "metrics", "show", "--json"], project)
    report = (project / "reports/report.md").read_text()
    summary = json.loads((project / "reports/summary.json").read_text())
    # the one metrics file: the headline, every claim's verdict and each task's ranking metric per scheme
    (rev,) = json.loads(shown).values()  # DVC leaves out the null values (a contrast that was not run)
    assert {c: v["verdict"] for c, v in rev["data"]["reports/headline.json"]["data"]["claims"].items()} == {
        c: v["verdict"] for c, v in json.loads((project / "reports/headline.json").read_text())["claims"].items()}
    headline = json.loads((project / "reports/headline.json").read_text())
    from pelab.analysis.claims import load_claims

    assert set(headline["claims"]) == {c.id for c in load_claims()}
    for tasks, schemes in ((s.values(full, s.tasks_key), s.values(full, s.schemes_key)) for s in STUDIES):
        for task in tasks:
            assert sorted(summary[task]) == sorted(schemes), task
            (ranked, values), = headline[task].items()
            assert sorted(values) == sorted(schemes) and all(v is not None for v in values.values()), task
            for scheme in schemes:
                assert f"`{scheme}`" in report
                metrics = json.loads((project / f"reports/metrics/{task}/{scheme}.json").read_text())
                assert metrics and all(value is not None for value in metrics.values()), (task, scheme, metrics)
    for scheme in full["pe"]["schemes"]:  # translation's metrics, live curves and attention maps
        assert set(json.loads((project / f"reports/metrics/translation/{scheme}.json").read_text())) == {
            "bleu", "chrf", "bleu17"}, scheme
        live = project / f"dvclive/translation/{scheme}/seed_{SEEDS - 1}/plots/metrics"
        assert {p.name for p in live.iterdir()} == {"loss.tsv", "lr.tsv", "val_loss.tsv"}, scheme
        assert f"translation_attention_{scheme}.png" in report, scheme
    from pelab.tasks import get_task

    study = next(s for s in STUDIES if s.name == "length")
    length = study.values(full, study.tasks_key)
    said = {get_task(t).statement()["statement"] for t in length}
    assert len(said) == len(PROBLEMS) and all(report.count(text) == 1 for text in said)  # each problem states itself
    assert "in-context floor" in report
    from pelab.analysis.claims import load_claims

    assert [line for line in report.splitlines() if line.startswith("## ")][0] == "## Claims"  # it opens with them
    assert all(f"**{claim.id}**" in report for claim in load_claims())  # every claim judged, whatever the verdict
    for line in report.splitlines():
        if line.startswith("!["):
            assert (project / "reports" / line.split("(")[1].rstrip(")")).exists(), line


def test_every_run_of_the_default_study_is_scored_at_its_best_validation_step(study):
    import pandas as pd

    project, full, _ = study
    records = pd.read_csv(project / "reports/records.csv", dtype={"length": str})
    runs = records[["task", "pe", "seed"]].drop_duplicates()
    chosen = records[(records["split"] == "train") & (records["metric"] == "best_step")]
    steps = records[(records["split"] == "train") & (records["metric"] == "steps")].set_index(["task", "pe", "seed"])
    assert len(chosen) == len(runs) and len(chosen) == len(steps)
    for row in chosen.itertuples():
        assert 0 < row.value <= steps.loc[(row.task, row.pe, row.seed), "value"]
    val = records[(records["split"] == "val") & records["metric"].isin(["loss", "loss_last"])]
    best_and_last = val.pivot_table(index=["task", "pe", "seed"], columns="metric", values="value")
    assert len(best_and_last) == len(runs) and (best_and_last["loss"] <= best_and_last["loss_last"]).all()
    report = (project / "reports/report.md").read_text()
    section = report[report.index("## Which step is scored"):]
    for task in (t for s in STUDIES for t in s.values(full, s.tasks_key)):
        assert f"| {task} |" in section, task


def test_rope_is_also_read_with_every_context_extension_in_the_length_and_lm_sections(study):
    """The RoPE extension menu (``rope_extensions.MENU``, HF's names) as rows of their own in the length study's
    and the LM's tables, from records of their own."""
    import pandas as pd

    from pelab.positional.rope_extensions import MENU

    project, full, _ = study
    records = pd.read_csv(project / "reports/records.csv", dtype={"length": str})
    report = (project / "reports/report.md").read_text()
    length_section = report[report.index("## Length generalisation"):report.index("## Language model")]
    lm_section = report[report.index("## Language model"):]
    for task, section in ((full["length_tasks"][0], length_section), ("lm", lm_section)):
        rope = records[(records["task"] == task) & (records["pe"] == "rope")]
        for variant in MENU:
            assert (rope["split"].str.endswith(variant.suffix)).any(), (task, variant.label)
            assert f"`rope+{variant.label}`" in section, (task, variant.label)


def test_rope_and_alibi_runs_are_recalibrated_and_read_before_and_after(study):
    """The smoke profile's ``lm.eval.recalibrate`` (rope, alibi): every method's fine-tuned runs, kept beside their
    base runs, scored under their own suffixes, and the before/after table in the LM section."""
    import pandas as pd

    from pelab.positional.recalibration import METHODS

    project, _, _ = study
    records = pd.read_csv(project / "reports/records.csv", dtype={"length": str})
    lm_section = (project / "reports/report.md").read_text().split("## Language model")[1]
    assert "**Recalibration, before and after.**" in lm_section
    for scheme, methods in (("rope", METHODS), ("alibi", METHODS[:1])):
        mine = records[(records["task"] == "lm") & (records["pe"] == scheme)]
        for method in methods:
            scored = mine[(mine["split"] == "at_4L" + method.suffix) & (mine["metric"] == "ppl_sliding")]
            assert sorted(scored["seed"]) == list(range(SEEDS)), (scheme, method.name)
            assert f"`{scheme}+{method.label}`" in lm_section
            for seed in range(SEEDS):
                assert (project / "runs/lm" / scheme / "recalibrated" / method.name / f"seed_{seed}" / "model.pt").exists()
    assert not (records["pe"].isin(["none"]) & records["split"].str.endswith("tuned")).any()  # not listed: not tuned
