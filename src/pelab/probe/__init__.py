"""The per-run probe that evaluation runs: each task names its probe inputs (``Scoring.probe``, ``pelab.tasks.scoring``), the model reads
each once, and the diagnostics of its attention (``diagnostics``) become tidy records beside the run's scores.

Rows: split ``probe``, length = tokens per row, one metric per diagnostic (mean over layers; the binned ones,
``<metric>_within`` and ``<metric>_beyond``, over the queries just below and from the training length on); a row
``trained_length`` (length "all") holds the longest row the model was trained on, so a reader tells in-range
lengths from beyond without the task's config. Schemes that rotate queries and keys (their
``rotation_frequencies``) add, at the first probe length, ``rope_band_<f>_share`` and ``rope_band_<f>_period``
for each rotated pair f. Nothing here branches on the scheme.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from pelab.device import autocast
from pelab.model.sequence import SequenceTransformer
from pelab.probe.diagnostics import attention_diagnostics, binned, frequency_use, period


@dataclass(frozen=True)
class Probe:
    """What a task asks the probe to read: rows of tokens (B, T) per length, and the longest row in training."""

    trained_length: int
    inputs: list[torch.Tensor]


@torch.no_grad()
def probe_rows(model: SequenceTransformer, probe: Probe, device: torch.device) -> list[dict[str, Any]]:
    model.eval()
    rows: list[dict[str, Any]] = [{"split": "probe", "length": "all", "metric": "trained_length",
                                   "value": float(probe.trained_length)}]
    # the rotating layers read: every layer's scheme's frequencies (a layout's differ per layer), those of the first
    # layer that rotates, and every layer that rotates with the same ones
    layer_frequencies = [model.pe.layer(i).rotation_frequencies() for i in range(len(model.encoder.layers))]
    frequencies = next((f for f in layer_frequencies if f is not None), None)
    rotating = [f is not None and torch.equal(f, frequencies) for f in layer_frequencies]
    for index, tokens in enumerate(probe.inputs):
        tokens = tokens.to(device)
        captured: list[tuple[torch.Tensor, torch.Tensor]] = []
        hooks = []
        if frequencies is not None and index == 0:
            for layer, reads in zip(model.encoder.layers, rotating):
                if reads:
                    hooks.append(layer.attn.register_forward_pre_hook(
                        lambda module, args: captured.append(module.project(args[0], args[1])[:2])))
        try:
            with autocast(device):
                _, attentions = model(tokens, need_weights=True)
        finally:
            for hook in hooks:
                hook.remove()
        per_layer = [{**attention_diagnostics(layer["self"].float(), model.causal),
                      **binned(layer["self"].float(), model.causal, probe.trained_length)}
                     for layer in attentions if layer["self"] is not None]  # an attention-free layer has none
        length = tokens.shape[1]
        for metric in per_layer[0] if per_layer else ():
            rows.append({"split": "probe", "length": length, "metric": metric,
                         "value": sum(d[metric] for d in per_layer) / len(per_layer)})
        if captured:
            share = torch.stack([frequency_use(q, k) for q, k in captured]).mean(0)  # (Dh/2,)
            for band, (s, f) in enumerate(zip(share.tolist(), frequencies.tolist())):
                if f == 0:  # a pair partial RoPE leaves unrotated: no period to read
                    continue
                rows += [{"split": "probe", "length": length, "metric": f"rope_band_{band:02d}_share", "value": s},
                         {"split": "probe", "length": length, "metric": f"rope_band_{band:02d}_period",
                          "value": period(f)}]
    return rows
