"""The layouts' reading, for the LM and length sections: each layout against the schemes its layers use, where the
study also trained them alone (``command_a``'s sliding RoPE + global NoPE against ``rope`` and ``none``), seed by
seed, on the section's headline beyond the training length."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pelab.analysis.paired import seed_map
from pelab.positional.registry import build_positional_encoding, is_layout


def layer_types(cfg, scheme: str, causal: bool) -> tuple[str, set[str]]:
    """The layout's stack at the task's depth in words, and the schemes its layers use."""
    model = cfg.model
    depth = getattr(model, "n_layers", None) or getattr(model, "decoder_layers")
    pe = build_positional_encoding(scheme, d_model=model.d_model, n_heads=model.n_heads, causal=causal,
                                   n_layers=depth, options=cfg.options(scheme))
    return pe.layers_text(), {t.spec.scheme for t in pe.types}


def layout_reading(records: pd.DataFrame, cfg, task: str, schemes: list[str], split: str, metric: str, label: str,
                   lower_is_better: bool, causal: bool) -> str:
    """"**Layouts.** `command_a` (…): <label> 0.31 against `rope`'s 0.25 (higher on 5 of 5 seeds) and …", or "" where
    the study has no layout beside a scheme its layers use."""
    parts = []
    for layout in (s for s in schemes if is_layout(s)):
        text, used = layer_types(cfg, layout, causal)
        mine = seed_map(records, task, layout, split, metric)
        against = []
        for control in (s for s in schemes if s in used):
            theirs = seed_map(records, task, control, split, metric)
            paired = sorted(set(mine) & set(theirs))
            if not paired:
                continue
            better = sum((mine[k] < theirs[k]) if lower_is_better else (mine[k] > theirs[k]) for k in paired)
            against.append(f"`{control}`'s {np.mean([theirs[k] for k in paired]):.3f} "
                           f"({'lower' if lower_is_better else 'higher'} on {better} of {len(paired)} seeds)")
        if mine and against:
            parts.append(f"`{layout}` ({text}): {label} {np.mean(list(mine.values())):.3f} against "
                         + " and ".join(against))
    return f"**Layouts on {task}.** " + "; ".join(parts) + "." if parts else ""
