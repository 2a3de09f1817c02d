"""The switches' reading, for the LM and length sections: each switched scheme (``rope_ssmax``: ``rope`` with SSMax)
against the scheme it switches, where the study trained both: the same seeds, so the same initial weights for every
shared parameter and the same batches (``model.switches``); paired by seed, the mean difference with its 95%
t-interval and how many seeds moved each way."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pelab.analysis.paired import seed_map
from pelab.positional.registry import scheme_spec
from pelab.positional.registry import switched_from as base_of
from pelab.positional.switched import SWITCHES
from pelab.stats import summarize


def switch_reading(records: pd.DataFrame, task: str, schemes: list[str],
                   columns: list[tuple[str, str, str, bool]]) -> str:
    """"**Switches against dilution on <task>** …: `rope_ssmax` − `rope`: <label> −0.12 [−0.3, 0.05] (lower on 4 of 5
    seeds); …", or "" where the study has no switched scheme beside its base. ``columns``: (split, metric, label,
    lower is better)."""
    parts = []
    for scheme in schemes:
        base = base_of(scheme)
        if base is None or base not in schemes:
            continue
        said = []
        for split, metric, label, lower in columns:
            mine, theirs = seed_map(records, task, scheme, split, metric), seed_map(records, task, base, split, metric)
            paired = sorted(set(mine) & set(theirs))
            if not paired:
                continue
            diff = [mine[k] - theirs[k] for k in paired]
            s = summarize(diff)
            better = sum((d < 0) if lower else (d > 0) for d in diff)
            equal = sum(d == 0 for d in diff)
            interval = f" [{s['ci_low'] + 0.0:+.3f}, {s['ci_high'] + 0.0:+.3f}]" if len(paired) > 1 else ""
            ties = f", equal on {equal}" if equal else ""
            said.append(f"{label} {np.mean([theirs[k] for k in paired]):.3f} → {np.mean([mine[k] for k in paired]):.3f}"
                        f", {s['mean'] + 0.0:+.3f}{interval} ({'lower' if lower else 'higher'} on {better}{ties} of "
                        f"{len(paired)} seeds)")
        if said:
            switches = " and ".join(scheme_spec(scheme).switches)
            parts.append(f"`{scheme}` ({switches}) against `{base}`: " + "; ".join(said))
    if not parts:
        return ""
    sources = sorted({s for name in schemes if base_of(name) in schemes for s in scheme_spec(name).switches})
    return (f"**Switches against dilution on {task}** ({'; '.join(f'{s}: {SWITCHES[s]}' for s in sources)}), each "
            "against the scheme it switches, paired by seed (same batches, same initial weights for every shared "
            "parameter): mean of the base → mean switched, the mean difference [95% t-interval]. "
            + " ".join(p + "." for p in parts))
