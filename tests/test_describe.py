"""Schemes state their own setup (``PositionalEncoding.describe``); the report prints what they say and names no
scheme to do it: a scheme registered here, named in no file of ``report/``, reaches the report's choices, tables
and diagnostics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import torch
from conftest import smoke_params, smoke_raw, study_of

from pelab.positional import SCHEMES, SchemeSpec, Usage, build_positional_encoding, scheme_names
from pelab.positional.sinusoidal import SinusoidalPositionalEncoding
from pelab.positional.t5 import distinct_up_to

REPORT = Path(__file__).resolve().parents[1] / "src/pelab/report"
USAGE = Usage("copy", longest_train=20, longest_eval=40, offsets=range(1, 10), long_offsets=range(12, 20))


@pytest.mark.parametrize("scheme", scheme_names())
def test_every_scheme_describes_itself_in_one_sentence_or_not_at_all(scheme):
    pe = build_positional_encoding(scheme, d_model=16, n_heads=2, causal=scheme in ("xpos", "mamba"))
    text = pe.describe(USAGE)
    assert text is None or (text.endswith(".") and "\n" not in text and scheme not in text.split(":")[0])


def test_the_schemes_with_choices_to_state_say_what_they_are():
    t5 = build_positional_encoding("t5", d_model=16, n_heads=2, options={"num_buckets": 32, "max_distance": 128})
    assert distinct_up_to(32, 128) == 7
    assert t5.describe(USAGE) == ("32 buckets, max distance 128: offsets up to ±7 have a bucket of their own; the "
                                  "offsets it trains on (offsets 1–9) get 8 buckets for 9 offsets; the longer test's "
                                  "offsets (offsets 12–19) get 2 buckets for 8 offsets.")
    learned = build_positional_encoding("learned", d_model=16, n_heads=2, options={"max_positions": 64})
    assert "64 rows" in learned.describe(USAGE) and "(20 positions)" in learned.describe(USAGE)
    assert "random initialisation" in learned.describe(USAGE)
    fire = build_positional_encoding("fire", d_model=16, n_heads=2, n_layers=2, options={"threshold": 8.0})
    assert "starts at 8, below the longest training row (20 positions;" in fire.describe(USAGE)
    assert "progressive interpolation is off" in build_positional_encoding("fire", d_model=16, n_heads=2,
                                                                           causal=True).describe(USAGE)
    assert "[0, 2048)" in build_positional_encoding("rand_rope", d_model=16, n_heads=2,
                                                    options={"max_position": 2048}).describe(USAGE)


class Wobble(SinusoidalPositionalEncoding):
    """A scheme the report has never heard of."""

    def describe(self, usage: Usage) -> str:
        return f"WOBBLE-SETUP for {usage.study} up to {usage.longest_train} positions."


def test_a_new_scheme_reaches_the_reports_choices_tables_and_diagnostics(tmp_path, monkeypatch):
    from pelab.report.common import scheme_choices
    from pelab.report.context import ReportContext
    from pelab.report.diagnostics import section as diagnostics_section
    from pelab.report.tables import comparison_table

    assert not any("wobble" in path.read_text() for path in REPORT.rglob("*") if path.is_file())
    monkeypatch.setitem(SCHEMES, "wobble", SchemeSpec("wobble", Wobble))
    raw = smoke_raw()
    raw["copy"]["positional"]["wobble"] = {}
    params = smoke_params(tmp_path, copy=raw["copy"], pe={"schemes": ["sinusoidal", "wobble"]})
    records = pd.DataFrame(
        [{"task": "copy", "pe": pe, "seed": seed, "split": "test_long", "length": "all", "metric": "token_accuracy",
          "value": 0.1 * seed + (pe == "wobble") * 0.05} for pe in ("sinusoidal", "wobble") for seed in range(3)]
        + [{"task": "copy", "pe": pe, "seed": seed, "split": "probe", "length": length, "metric": metric,
            "value": value} for pe in ("sinusoidal", "wobble") for seed in range(3)
           for length, metric, value in (("all", "trained_length", 12.0), ("12", "attn_entropy_within", 0.9),
                                         ("24", "attn_entropy_within", 0.9), ("24", "attn_entropy_beyond", 0.95),
                                         ("12", "first_token_share_within", 0.1),
                                         ("24", "first_token_share_within", 0.1),
                                         ("24", "first_token_share_beyond", 0.2), ("12", "attn_distance_within", 3.0),
                                         ("24", "attn_distance_within", 3.0), ("24", "attn_distance_beyond", 4.0))])
    ctx = ReportContext(study_of(params), records, pd.DataFrame(), tmp_path / "runs", tmp_path / "results",
                        tmp_path / "figures")
    choices = scheme_choices(ctx, "copy", list(params.schemes), USAGE)
    assert choices == ["`wobble`: WOBBLE-SETUP for copy up to 20 positions."]
    table, best = comparison_table(records, "copy", list(params.schemes), [("test_long", "token_accuracy", "tokens")],
                                   reference="sinusoidal")
    assert "| `wobble` | 3 | 0.150 ± 0.100" in table and best == "wobble"
    lines = "\n".join(diagnostics_section(ctx))
    assert "| `wobble` | 0.150 ± 0.100 | 0.90 ± 0.00 → 0.95 ± 0.00" in lines
    assert (tmp_path / "figures" / "diagnostics_by_length.png").exists()
    assert torch.is_tensor(Wobble(d_model=4, n_heads=1, base=10000.0).embed(torch.zeros(1, 2, 4), torch.arange(2)))


@pytest.mark.parametrize(("schemes", "expected"), [(["none", "rope", "t5"], None), (["t5", "fire", "learned"], "learned"),
                                                   (["sinusoidal", "alibi"], None)])
def test_the_learned_table_the_analyses_draw_is_found_by_what_the_scheme_is(tmp_path, schemes, expected):
    """A learned table of positions added to the embeddings (``learned``), never T5's table of bucket biases, which is
    also an ``nn.Embedding`` named ``table``: the copy and translation analyses of a learned table draw it."""
    from pelab.report.common import table_scheme
    from pelab.report.context import ReportContext

    params = smoke_params(tmp_path, pe={"schemes": schemes})
    ctx = ReportContext(study_of(params), pd.DataFrame(), pd.DataFrame(), tmp_path / "runs", tmp_path / "results",
                        tmp_path / "figures")
    assert table_scheme(ctx) == expected and table_scheme(ctx, "translation") == expected
