"""Write reports/report.md and its figures: a header, then ``SECTIONS`` in order.

A section is ``section(ctx) -> list[str]`` of markdown lines over one ``ReportContext``: it reads, draws its figures
into ``ctx.figures_dir`` and fills its template (``templates/<name>.md``, ``render``); it returns nothing when its
task is not in the study. One module per study (``copy``, ``translation``, ``length``, ``lm``) and one per analysis
(``analyses/<name>.py``); the numbers of the analyses are computed by ``pelab.analysis``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
from tqdm.auto import tqdm

from pelab import io
from pelab.report import analyses, claims, copy, diagnostics, length, lm, selection, translation, tuning
from pelab.report.analyses import (anchors, attention, curves, distance_decay, invariants, learned_trajectory,
                                   position_tables, shift_property, similarity, translation_analyses)
from pelab.report.context import ReportContext
from pelab.report.render import render
from pelab.report.study import Study
from pelab.report.style import rendering_in_background, setup
from pelab.studies import STUDIES


def _copy_only(section: Callable[[ReportContext], list[str]]) -> Callable[[ReportContext], list[str]]:
    return lambda ctx: section(ctx) if ctx.has_task("copy") else []


# In report order: the claims and their verdicts, the copy study, the references' analyses (most on the copy
# models), translation, length.
SECTIONS: list[Callable[[ReportContext], list[str]]] = [
    claims.section,
    copy.section,
    analyses.intro,
    *(_copy_only(m.section) for m in (position_tables, similarity, learned_trajectory, distance_decay,
                                       shift_property, invariants, attention, curves)),
    translation_analyses.section,
    anchors.section,
    translation.section,
    length.section,
    lm.section,
    diagnostics.section,
    selection.section,
    tuning.section,
]


def header(ctx: ReportContext) -> list[str]:
    params = ctx.params
    clauses = [{"title": study.title, "tasks": params.tasks_of(study.name),
                "schemes": params.studies[study.name].schemes, "own": params.studies[study.name].task_schemes,
                "own_key": study.task_schemes_key} for study in STUDIES if params.tasks_of(study.name)]
    return render("header.md", date=_dt.date.today().isoformat(), profile=params.profile, studies=clauses,
                  seeds=ctx.seeds, reference=params.reference)


def build_report(
    params: Study, records_path: Path, plots_dir: Path, runs_dir: Path, results_dir: Path, figures_dir: Path,
    out_path: Path, tuning_path: Path | None = None,
) -> None:
    setup()
    # the figures render in other processes while the sections go on (forked first, before any torch work here);
    # every one is written before the directory is moved into place
    with io.atomic_dir(figures_dir) as tmp, rendering_in_background(), torch.no_grad():
        records = pd.read_csv(records_path, dtype={"length": str})
        curves = pd.read_csv(plots_dir / "curves_per_seed.csv")
        tuning_table = io.read_json(tuning_path) if tuning_path is not None else None
        ctx = ReportContext(params, records, curves, runs_dir, results_dir, tmp, tuning_table)
        ctx.link = Path(figures_dir).name  # figures are drawn into a temporary directory, linked by their final name
        lines = header(ctx)
        for section in tqdm(SECTIONS, desc="report", unit="section", leave=False):
            lines += section(ctx)
    io.write_text_atomic(out_path, "\n".join(lines))
