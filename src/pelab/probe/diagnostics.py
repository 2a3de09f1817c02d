"""What a trained model's attention does, from its weights: the diagnostics that say why a scheme fails beyond
its training lengths. Pure functions of attention weights (and, for rotary schemes, of queries and keys).

For the weights w of one layer, (B, H, T, T), query i sees keys K_i (j <= i when causal, all T otherwise):
* entropy H_i = -sum_j w_ij log w_ij (nats), and H_i / log|K_i| (1: uniform over what it sees, 0: one key).
  Entropy that grows with length is attention dispersing over more keys than training showed (the
  "attention dilution" of length extrapolation; Han et al., LM-Infinite, https://arxiv.org/abs/2308.16137 §3);
* first-token share w_i0, and |K_i| w_i0 (1: the uniform share; above 1: an attention sink, Xiao et al.,
  StreamingLLM, https://arxiv.org/abs/2309.17453 §3.1);
* attended distance sum_j w_ij |i - j| (token indices), and over the uniform one, mean_{j in K_i} |i - j|.
Means run over rows, heads and queries (query 0 of a causal model sees one key and is left out of all but the
distance), then over layers.

The normalised forms carry a length trend by construction (a constant sink's |K_i| w_i0 grows with T, a fixed
window's entropy over log|K_i| falls), so comparisons across lengths use absolute quantities over queries binned
by absolute position (``binned``): raw entropy, first-token share and attended distance of the queries just below
the training length L, the last eighth of it (``_within``: causal, they see about L keys, as the queries beyond
do), and of those at positions L and beyond (``_beyond``). Against all queries before L (which see 1..L keys) a
model that attends to exactly its last L keys, a perfect extrapolator, would read +0.90 nats of entropy "rise" at
2L; against the band it reads +0.06 (``pelab.analysis.diagnostics.window_null``). A constant sink or a fixed window
reads the same in both bins at every length (``tests/test_probe.py``); what differs is the model.

Rotary schemes: the use of each rotated pair of dimensions (frequency theta_f), as the mean norm of the query's
pair times the key's, a share of their sum over pairs (Barbero et al., "Round and Round We Go! What makes Rotary
Positional Encodings useful?", https://arxiv.org/abs/2410.06205 §5, who find Gemma's low frequencies most used).
"""

from __future__ import annotations

import math

import torch


def visible_keys(length: int, causal: bool, device: torch.device | str = "cpu") -> torch.Tensor:
    """(T,) how many keys each query sees: i + 1 when causal, else T."""
    if causal:
        return torch.arange(1, length + 1, device=device, dtype=torch.float64)
    return torch.full((length,), float(length), device=device, dtype=torch.float64)


def uniform_distance(length: int, causal: bool) -> torch.Tensor:
    """(T,) mean |i - j| over the keys query i sees, as uniform attention would attend."""
    i = torch.arange(length, dtype=torch.float64)
    if causal:
        return i / 2  # mean of 0..i
    return (i * (i + 1) / 2 + (length - 1 - i) * (length - i) / 2) / length


def attention_diagnostics(weights: torch.Tensor, causal: bool) -> dict[str, float]:
    """weights: (B, H, T, T) one layer's attention (rows sum to 1, zero on keys not seen). Returns the means
    described in the module docstring: attn_entropy, attn_entropy_norm, first_token_share, first_token_ratio,
    attn_distance, attn_distance_norm."""
    w = weights.double()
    t = w.shape[-1]
    seen = visible_keys(t, causal, w.device)  # (T,)
    entropy = -(w * w.clamp_min(1e-30).log()).sum(-1)  # (B, H, T)
    i, j = torch.arange(t, device=w.device)[:, None], torch.arange(t, device=w.device)[None, :]
    distance = (w * (i - j).abs().double()).sum(-1)  # (B, H, T)
    many = seen > 1  # queries with a choice to make
    first = w[..., 0]  # (B, H, T)
    uniform = uniform_distance(t, causal).to(w.device)
    return {
        "attn_entropy": float(entropy[..., many].mean()),
        "attn_entropy_norm": float((entropy[..., many] / seen[many].log()).mean()),
        "first_token_share": float(first[..., many].mean()),
        "first_token_ratio": float((first[..., many] * seen[many]).mean()),
        "attn_distance": float(distance.mean()),
        "attn_distance_norm": float((distance[..., many] / uniform[many]).mean()),
    }


BINNED = ("attn_entropy", "first_token_share", "attn_distance")
BAND = 8  # the within bin: the last L // BAND query positions before L (at least one)


def binned(weights: torch.Tensor, causal: bool, trained_length: int) -> dict[str, float]:
    """weights: (B, H, T, T). ``<metric>_within`` over queries L - L // BAND <= i < L with a choice (query 0 of a
    causal model has none), ``<metric>_beyond`` over queries i >= L (only where T > L): raw entropy (nats),
    first-token share and attended distance, each a mean over rows, heads and the bin's queries."""
    w = weights.double()
    t = w.shape[-1]
    position = torch.arange(t, device=w.device)
    entropy = -(w * w.clamp_min(1e-30).log()).sum(-1)  # (B, H, T)
    distance = (w * (position[:, None] - position[None, :]).abs().double()).sum(-1)  # (B, H, T)
    values = {"attn_entropy": entropy, "first_token_share": w[..., 0], "attn_distance": distance}
    choice = visible_keys(t, causal, w.device) > 1
    out = {}
    below = (position < trained_length) & (position >= trained_length - max(1, trained_length // BAND))
    for name, queries in (("within", choice & below), ("beyond", position >= trained_length)):
        if bool(queries.any()):
            out.update({f"{metric}_{name}": float(values[metric][..., queries].mean()) for metric in BINNED})
    return out


def frequency_use(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """q, k: (B, H, T, Dh) queries and keys before rotation, pairs interleaved (x_2f, x_2f+1) as the rotation
    pairs them. Returns (Dh/2,) each pair's share of mean ||q_f|| · mean ||k_f||, averaged over heads."""
    q_norm = q.double().unflatten(-1, (-1, 2)).norm(dim=-1).mean(dim=(0, 2))  # (H, Dh/2)
    k_norm = k.double().unflatten(-1, (-1, 2)).norm(dim=-1).mean(dim=(0, 2))
    use = q_norm * k_norm
    return (use / use.sum(-1, keepdim=True)).mean(0)


def period(frequency: float) -> float:
    """Tokens per full turn of a pair rotated by ``frequency`` radians per position."""
    return 2 * math.pi / frequency
