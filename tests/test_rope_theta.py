"""RoPE's base θ as an axis (positional/rope_theta.py): the schemes are ``rope`` at other bases, and the two bounds
are the papers' (Liu et al. 2024's periodic bound by its definition, Men et al. 2024's lower bound against the values
of its Figure 1 and by its definition)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
import torch
from torch.testing import assert_close

from pelab.model.config import ModelConfig
from pelab.positional import Usage, build_positional_encoding, scheme_of, scheme_options
from pelab.positional.rope_theta import long_term_decay, periodic_bound, retrieval_bound

THETA_AXIS = {"rope_theta10": 10.0, "rope_theta100": 100.0, "rope_theta1k": 1e3, "rope_theta1m": 1e6}


@pytest.mark.parametrize(("name", "base"), list(THETA_AXIS.items()))
def test_each_theta_scheme_is_rope_at_its_base(name: str, base: float) -> None:
    pe = build_positional_encoding(name, d_model=64, n_heads=2, causal=True)
    rope = build_positional_encoding("rope", d_model=64, n_heads=2, causal=True, options={"base": base})
    q, k = torch.randn(2, 2, 9, 32), torch.randn(2, 2, 9, 32)
    positions = torch.arange(100, 109)
    for ours, theirs in zip(pe.rotate(q, k, positions, positions), rope.rotate(q, k, positions, positions)):
        assert_close(ours, theirs, rtol=0, atol=0)
    assert scheme_of(pe) == name and pe.base == base and pe.variants == "rope_extensions"
    assert build_positional_encoding(name, d_model=64, n_heads=2, options={"base": 7.0}).base == 7.0


@pytest.mark.parametrize(("length", "low", "high"), [(1000, 3.5e3, 5e3), (2048, 1.0e4, 1.6e4), (4096, 2.5e4, 3.5e4)])
def test_the_retrieval_bound_is_men_et_al_figure_1(length: int, low: float, high: float) -> None:
    """Figure 1 (head dimension 128): about 4e3 at 1k, 1.5e4 at 2k, 3e4 at 4k (its fit: 0.0424·T^1.628)."""
    assert low <= retrieval_bound(128, length) <= high


@pytest.mark.parametrize(("head_dim", "length"), [(128, 1000), (64, 256), (32, 41), (16, 64)])
def test_the_retrieval_bound_is_the_smallest_base_that_keeps_every_b_m_nonnegative(head_dim: int, length: int) -> None:
    """It holds at the bound, and at no base below it on a grid finer than the function's own (the set of bases that
    hold is not one interval, so a bisection over the range would land on a later edge)."""
    bound = retrieval_bound(head_dim, length)
    assert (long_term_decay(bound, head_dim, length) >= 0).all()
    for base in torch.logspace(0, math.log10(bound), 1500, dtype=torch.float64)[:-1].tolist():
        assert (long_term_decay(base * 0.9999, head_dim, length) < 0).any(), base


@pytest.mark.parametrize(("head_dim", "length"), [(64, 256), (32, 41)])
def test_at_the_periodic_bound_the_slowest_pair_turns_exactly_once_in_the_length(head_dim: int, length: int) -> None:
    base = periodic_bound(head_dim, length)
    slowest = base ** (-(head_dim - 2) / head_dim)  # θ_{d/2-1}
    assert 2 * math.pi / slowest == pytest.approx(length)


def test_the_setup_sentence_places_the_base_against_both_bounds() -> None:
    pe = build_positional_encoding("rope_theta10", d_model=256, n_heads=4, causal=True)
    text = pe.describe(Usage("the LM study", 256, 2048, range(256)))
    assert text.startswith("θ = 10: every pair turns within the 256 trained positions (Liu et al. 2024: θ ≤ 45.9 for "
                           "d = 64); reading 256 positions needs θ ≥ 1.4")
    assert text.endswith("(Men et al. 2024).") and "2048 positions θ ≥ 2.96e+04" in text


def test_the_lm_reading_says_where_each_base_stops() -> None:
    from pelab.report.theta import lm_theta_reading

    class Cfg:
        model = ModelConfig(d_model=64, n_layers=2, n_heads=4, d_ff=32, dropout=0.0)

        def options(self, scheme):
            return scheme_options(scheme)

    curves = {"rope": [10, 10.5, 30, 90], "rope_theta10": [12, 12.5, 13, 13.1], "rope_theta1m": [9, 15, 40, 90]}
    records = pd.DataFrame([{"task": "lm", "pe": pe, "seed": seed, "split": "sliding", "metric": "ppl",
                             "length": str(length), "value": v + seed}
                            for pe, vs in curves.items() for seed in (0, 1)
                            for length, v in zip((64, 128, 256, 512), vs)])
    text = lm_theta_reading(records, Cfg(), "lm", ["alibi", *curves], [64, 128, 256, 512], 1.10)
    assert text.endswith("of its value at L: T = 512 for θ = 10 (`rope_theta10`), T = 128 for θ = 10000 (`rope`), "
                         "T = 64 for θ = 1e+06 (`rope_theta1m`).")
    assert text.startswith("**RoPE's base θ** (d = 16: every pair turns within the 64 trained positions for θ ≤ ")
    assert lm_theta_reading(records, Cfg(), "lm", ["rope", "alibi"], [64, 128], 1.10) == ""
