"""Experiments side by side, narrow: what ``dvc exp show`` holds, as one table a terminal can show.

``dvc exp show`` gives a column to every param of params.yaml and every metric: the composed (task, scheme) items
the stages loop over (``StudyRecord.runs_key``) alone are a few hundred, so at pelab's size it prints some 300
columns, "…" in each. Here each experiment is a **column** and each row one thing that differs: first the params
that differ between the experiments shown (the composed items left out: they follow from the lists and options),
then the headline (reports/headline.json, the one metrics file: ``pelab.aggregate.headline``) — each claim's verdict
and measured contrast, then each task's ranking metric per scheme — where it differs, or all of it with
``all_metrics``. Read from ``dvc exp show --json`` (DVC 3's layout: a baseline per row with its experiments).
``ledger`` is the claims alone across the experiments, by profile: at which size each claim starts to hold.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HEADLINE = "reports/headline.json"  # the aggregate stage's headline: the claims' verdicts, each task's ranking metric
MISSING = "–"
# the profiles from the smallest model and budget to the largest (a ledger's columns; others after them, by name)
SIZES = ("smoke", "quick", "medium", "full_shape", "full")


@dataclass
class Experiment:
    name: str  # "workspace", the baseline's branch or short rev, or the experiment's name
    params: dict[str, Any] = field(default_factory=dict)  # flat: "copy.train.steps" -> 25
    metrics: dict[tuple[str, str, str], float] = field(default_factory=dict)  # (task, metric, scheme) -> value
    claims: dict[str, tuple[str, float | None]] = field(default_factory=dict)  # id -> (verdict, contrast)


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict) and data:
        return {k: v for key, value in data.items() for k, v in _flat(value, f"{prefix}{key}.").items()}
    return {prefix.rstrip("."): data}


def _composed_keys() -> tuple[str, ...]:
    from pelab.studies import STUDIES

    return tuple(k for s in STUDIES for k in (s.runs_key, s.tuned_runs_key) if k)


def _experiment(name: str, data: dict[str, Any], composed: tuple[str, ...]) -> Experiment:
    exp = Experiment(name)
    for file, values in (data.get("params") or {}).items():
        for key, value in _flat((values or {}).get("data") or {}).items():
            if key.split(".", 1)[0] not in composed:
                exp.params[key if file == "params.yaml" else f"{file}:{key}"] = value
    for file, values in (data.get("metrics") or {}).items():
        if Path(file).as_posix() != HEADLINE:
            continue
        found = (values or {}).get("data") or {}
        for claim, said in (found.get("claims") or {}).items():
            contrast = said.get("contrast")
            exp.claims[claim] = (str(said.get("verdict", MISSING)), None if contrast is None else float(contrast))
        for task, metrics in found.items():
            if task == "claims" or not isinstance(metrics, dict):
                continue
            for metric, schemes in metrics.items():
                for scheme, value in (schemes or {}).items():
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        exp.metrics[(task, metric, scheme)] = float(value)
    return exp


def read(entries: list[dict[str, Any]]) -> list[Experiment]:
    """Every row of ``dvc exp show --json``: the workspace, each baseline and each of its experiments, in order."""
    composed = _composed_keys()
    out = []
    for entry in entries:
        rev = str(entry.get("rev", ""))
        name = entry.get("name") or (rev if rev == "workspace" else rev[:7])
        out.append(_experiment(name, entry.get("data") or {}, composed))
        for group in entry.get("experiments") or []:
            for rev in group.get("revs") or []:
                out.append(_experiment(rev.get("name") or str(rev.get("rev", ""))[:7], rev.get("data") or {},
                                       composed))
    return out


WIDTH = 120  # the terminal the tables are sized for


def _cell(value: Any, width: int = 24) -> str:
    text = MISSING if value is None else f"{value:.4g}" if isinstance(value, float) else \
        json.dumps(value, separators=(",", ":")).replace('"', "") if isinstance(value, (list, dict)) else str(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def _param_cells(values: list[Any], width: int) -> list[str]:
    """One param's cells: a list in the first column as it is, in the others what it adds (+) and drops (−) against
    the first (``lm_schemes``: ``+rope,rope_gate``), so that the difference is what a narrow column shows."""
    first = values[0]
    if not isinstance(first, list) or not all(isinstance(v, list) for v in values):
        return [_cell(v, width) for v in values]
    cells = [_cell(first, width)]
    for value in values[1:]:
        added = [x for x in value if x not in first]
        dropped = [x for x in first if x not in value]
        text = " ".join(part for part in (f"+{','.join(map(str, added))}" if added else "",
                                          f"−{','.join(map(str, dropped))}" if dropped else "") if part)
        cells.append(_cell(text or ("same, reordered" if value != first else "same"), width))
    return cells


NOT_RUN = "not run at this profile"  # pelab.analysis.claims.NOT_RUN, not imported: it would load pandas (1.7 s)


def _said(found: tuple[str, float | None] | None, width: int = 40) -> str:
    """A claim's cell: its verdict, with the measured contrast where it has one ("held +0.301"; "not run")."""
    if found is None:
        return MISSING
    verdict, contrast = found
    verdict = "not run" if verdict == NOT_RUN else verdict
    return _cell(verdict if contrast is None else f"{verdict} {contrast:+.3g}", width)


def _markdown(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(r) + " |" for r in rows)])


def table(experiments: list[Experiment], all_metrics: bool = False, task: str | None = None) -> str:
    """A Markdown table: one column per experiment; the params that differ, then the claims and the metrics of the
    headline (``all_metrics``: also those equal in every experiment; ``task``: only its claims and metrics)."""
    if not experiments:
        return "no experiments (dvc exp show lists none)"
    params = sorted({k for e in experiments for k in e.params})
    changed = [k for k in params if len({json.dumps(e.params.get(k), sort_keys=True) for e in experiments}) > 1]
    claims = list(dict.fromkeys(c for e in experiments for c in e.claims))
    metrics = sorted({k for e in experiments for k in e.metrics if task is None or k[0] == task})
    if not all_metrics:
        claims = [c for c in claims if len({e.claims.get(c) for e in experiments}) > 1]
        metrics = [k for k in metrics if len({e.metrics.get(k) for e in experiments}) > 1]
    header = ["", *(e.name for e in experiments)]
    labels = [f"`{k}`" for k in changed] + [f"claim · {c}" for c in claims] + [" · ".join(k) for k in metrics]
    width = max(12, (WIDTH - 4 - max(map(len, labels), default=0)) // len(experiments) - 3)
    rows = [[f"`{k}`", *_param_cells([e.params.get(k) for e in experiments], width)] for k in changed]
    rows += [[f"claim · {c}", *(_said(e.claims.get(c), width) for e in experiments)] for c in claims if task is None]
    rows += [[f"{t} · {m} · {s}", *(_cell(e.metrics.get((t, m, s))) for e in experiments)] for t, m, s in metrics]
    if not rows:
        return "the experiments differ in no param and no headline number"
    return _markdown(header, rows)


def _size(profile: str) -> tuple[int, str]:
    return (SIZES.index(profile) if profile in SIZES else len(SIZES), profile)


def starts_to_hold(by_profile: dict[str, list[str]]) -> str:
    """The smallest profile from which every experiment of that size and of every larger one that read the claim
    held it ("–" where none does): {profile: the verdicts of its experiments}."""
    read = {p: kept for p, v in by_profile.items() if (kept := [x for x in v if x not in ("not run", MISSING)])}
    start = MISSING
    for profile in sorted(read, key=_size, reverse=True):
        if not all(v.startswith("held") for v in read[profile]):
            break
        start = profile
    return start


def ledger(experiments: list[Experiment]) -> str:
    """The claims across experiments: a column per experiment (its name and profile), ordered by size, and the
    profile each claim starts to hold at (``starts_to_hold``)."""
    ran = sorted([e for e in compared(experiments) if e.claims],
                 key=lambda e: _size(str(e.params.get("profile", "?"))))
    if not ran:
        return "no experiment has a headline with claims (run `dvc exp run -S profile=quick`, then `dvc exp show`)"
    claims = list(dict.fromkeys(c for e in ran for c in e.claims))
    header = ["claim", *(f"{e.name} ({e.params.get('profile', '?')})" for e in ran), "holds from"]
    rows = []
    for claim in claims:
        by_profile: dict[str, list[str]] = {}
        for e in ran:
            by_profile.setdefault(str(e.params.get("profile", "?")), []).append(_said(e.claims.get(claim)))
        rows.append([claim, *(_said(e.claims.get(claim)) for e in ran), starts_to_hold(by_profile)])
    return _markdown(header, rows)


def compared(experiments: list[Experiment], names: tuple[str, ...] = ()) -> list[Experiment]:
    """The experiments to set side by side: those named (in that order; an unknown name fails naming the valid
    ones), else every one with a headline (a baseline whose params never ran has none), the workspace left out where
    it has the same params and headline as an experiment (it holds the last one run)."""
    if names:
        known = {e.name: e for e in experiments}
        missing = [n for n in names if n not in known]
        if missing:
            raise ValueError(f"unknown experiment {missing[0]!r}; valid choices: {', '.join(known)}")
        return [known[n] for n in names]
    ran = [e for e in experiments if e.claims or e.metrics]
    same = lambda a, b: (a.params, a.metrics, a.claims) == (b.params, b.metrics, b.claims)  # noqa: E731
    return [e for e in ran if e.name != "workspace" or not any(same(e, o) for o in ran if o is not e)]


def _shown(repo: str | Path) -> list[Experiment]:
    proc = subprocess.run(["dvc", "exp", "show", "--json"], cwd=repo, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ValueError(f"dvc exp show failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    return read(json.loads(proc.stdout or "[]"))


def show(repo: str | Path = ".", all_metrics: bool = False, task: str | None = None,
         names: tuple[str, ...] = ()) -> str:
    """``table`` of the experiments ``dvc exp show --json`` prints in ``repo`` (``compared``: ``names``, or every
    one that ran)."""
    return table(compared(_shown(repo), names), all_metrics, task)


def show_ledger(repo: str | Path = ".") -> str:
    """``ledger`` of what ``dvc exp show --json`` prints in ``repo``."""
    return ledger(_shown(repo))
