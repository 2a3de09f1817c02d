"""The selective SSM (positional/ssm.py) against PyPI mambapy's MambaBlock, an independent port of the official Mamba
(state-spaces/mamba mamba_simple.py), with the weights copied; and the ``mamba`` scheme (positional/ssm.py) in the
LM: the shared weights every scheme's, causal, no position read, incremental decoding the whole row, about
attention's parameters."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from pelab.model.config import ModelConfig
from pelab.positional import build_positional_encoding, scheme_options
from pelab.positional.ssm import SelectiveSSM
from pelab.tasks.lm.model import build_lm

mambapy = pytest.importorskip("mambapy.mamba")


def pair(d_model: int, expand: int, d_state: int, dtype=torch.float64, parallel: bool = False):
    """Ours and mambapy's block, its weights ours (the state-dict names are the same)."""
    torch.manual_seed(0)
    ours = SelectiveSSM(d_model, d_state=d_state, expand=expand).to(dtype)
    config = mambapy.MambaConfig(d_model=d_model, n_layers=1, d_state=d_state, expand_factor=expand, d_conv=4,
                                 pscan=parallel)
    theirs = mambapy.MambaBlock(config).to(dtype)
    theirs.load_state_dict(ours.state_dict(), strict=True)
    with torch.no_grad():  # away from the init, so every parameter matters
        for p in ours.parameters():
            p.add_(0.1 * torch.randn_like(p))
    theirs.load_state_dict(ours.state_dict(), strict=True)
    return ours, theirs


@pytest.mark.parametrize(("d_model", "expand", "d_state"), [(16, 1, 4), (64, 1, 16), (32, 2, 16)])
@pytest.mark.parametrize("parallel", [False, True], ids=["their_sequential_scan", "their_parallel_scan"])
def test_the_whole_row_is_mambapys_block(d_model, expand, d_state, parallel) -> None:
    ours, theirs = pair(d_model, expand, d_state, parallel=parallel)
    x = torch.randn(3, 37, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert_close(ours(x), theirs(x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("d_model", "expand", "d_state"), [(16, 1, 4), (32, 2, 16)])
def test_step_by_step_is_mambapys_step_and_our_whole_row(d_model, expand, d_state) -> None:
    ours, theirs = pair(d_model, expand, d_state)
    x = torch.randn(2, 12, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        whole = ours(x)
        first, state = ours.run(x[:, :5])
        mine = [first] + [ours.step(x[:, t:t + 1], state) for t in range(5, 12)]
        cache = (None, torch.zeros(2, expand * d_model, 3, dtype=torch.float64))
        their = []
        for t in range(12):
            out, cache = theirs.step(x[:, t], cache)
            their.append(out)
    assert_close(torch.cat(mine, dim=1), whole, rtol=1e-9, atol=1e-10)
    assert_close(torch.stack(their, dim=1), whole, rtol=1e-6, atol=1e-7)


def test_the_init_is_the_papers() -> None:
    """S4D-real A[c, n] = −(n + 1), D = 1, Δ = softplus(bias) log-uniform in [0.001, 0.1] (Gu & Dao 2023, §3.6)."""
    ssm = SelectiveSSM(64, d_state=16)
    assert_close(-torch.exp(ssm.A_log.detach()), -torch.arange(1.0, 17.0).expand(64, 16), rtol=1e-6, atol=0)
    assert torch.equal(ssm.D, torch.ones(64)) and ssm.dt_rank == 4
    dt = torch.nn.functional.softplus(ssm.dt_proj.bias)
    assert dt.min() >= 0.001 * (1 - 1e-5) and dt.max() <= 0.1 * (1 + 1e-5)


@pytest.mark.parametrize(("d_model", "ssm_count", "attention_count"), [(64, 16_320, 16_640), (256, 218_880, 263_168)])
def test_a_layer_s_ssm_holds_about_attention_s_parameters(d_model, ssm_count, attention_count) -> None:
    """The counts of positional/ssm.py's docstring: the quick and full LMs' widths."""
    config = ModelConfig(d_model=d_model, n_layers=2, n_heads=4, d_ff=2 * d_model, dropout=0.0)
    mamba, rope = build_lm("mamba", 50, config, None, seed=0), build_lm("rope", 50, config, None, seed=0)
    assert sum(p.numel() for p in mamba.pe.layer(0).parameters()) == ssm_count
    assert sum(p.numel() for p in rope.encoder.layers[0].attn.parameters()) == attention_count
    assert mamba.encoder.layers[0].attn is None
    shared = sum(p.numel() for p in rope.parameters()) - 2 * attention_count
    assert sum(p.numel() for p in mamba.parameters()) == shared + 2 * ssm_count


def lm(scheme: str):
    return build_lm(scheme, 23, ModelConfig(d_model=32, n_layers=2, n_heads=2, d_ff=64, dropout=0.0), None, 3).eval()


def test_the_lm_shares_every_other_weight_reads_no_position_and_is_causal() -> None:
    mamba, rope = lm("mamba"), lm("rope")
    ours = dict(mamba.named_parameters())
    for name, p in rope.named_parameters():
        if ".attn." not in name:
            assert torch.equal(ours[name], p), name
    tokens = torch.randint(0, 23, (2, 30), generator=torch.Generator().manual_seed(4))
    changed = tokens.clone()
    changed[:, 17] = (changed[:, 17] + 1) % 23
    with torch.no_grad():
        base, _ = mamba(tokens)
        assert torch.equal(mamba(tokens, positions=torch.arange(30) + 100)[0], base)  # no position read
        after = mamba(changed)[0]
    assert torch.equal(after[:, :17], base[:, :17]) and (after[:, 17:] - base[:, 17:]).abs().max() > 1e-3


def test_incremental_decoding_and_the_last_row_equal_the_whole_row() -> None:
    mamba = lm("mamba")
    tokens = torch.randint(0, 23, (2, 20), generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        whole, _ = mamba(tokens)
        for prompt in (1, 2, 7):  # shorter and longer than the conv's memory of 3
            caches = mamba.new_caches()
            parts = [mamba.extend(tokens[:, :prompt], caches, torch.arange(prompt))]
            parts += [mamba.extend(tokens[:, t:t + 1], caches, torch.arange(t + 1)) for t in range(prompt, 20)]
            assert_close(torch.cat(parts, dim=1), whole, rtol=1e-5, atol=1e-5)
        assert_close(mamba.last_logits(tokens), whole[:, -1], rtol=1e-5, atol=1e-5)


def test_bad_uses_fail_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^scheme 'mamba' is causal only") as error:
        build_positional_encoding("mamba", d_model=32, n_heads=2, causal=False, n_layers=2)
    with pytest.raises(ValueError, match=r"^positional.mamba.d_state must be an integer >= 1, got 0$"):
        scheme_options("mamba", {"d_state": 0}, "positional.mamba")
    with pytest.raises(ValueError, match=r"^switches sink act on attention, and this model has none"):
        lm("mamba+sink")
    assert "\n" not in str(error.value)


def test_the_attention_probe_reads_nothing_of_it() -> None:
    from pelab.probe import Probe, probe_rows

    rows = probe_rows(lm("mamba"), Probe(6, [torch.randint(0, 23, (2, 6)), torch.randint(0, 23, (2, 24))]),
                      torch.device("cpu"))
    assert rows == [{"split": "probe", "length": "all", "metric": "trained_length", "value": 6.0}]


def test_hiding_tokens_from_attention_is_refused_in_one_line() -> None:
    tokens = torch.randint(0, 23, (2, 8))
    with pytest.raises(ValueError, match=r"^an attention-free layer \(mamba\) cannot hide tokens") as error:
        lm("mamba")(tokens, hidden=torch.zeros(2, 8, dtype=torch.bool))
    assert "\n" not in str(error.value)


def test_the_encoder_decoder_refuses_it_and_evaluation_reads_it_without_the_temperature() -> None:
    from pelab.model.blocks import Decoder
    from pelab.positional.base import PositionalEncoding

    pe = build_positional_encoding("mamba", d_model=32, n_heads=2, causal=True, n_layers=2)
    assert not pe.attends and build_positional_encoding("rope", d_model=32, n_heads=2, causal=True).attends
    with pytest.raises(ValueError, match=r"^scheme 'mamba' replaces self-attention, which the encoder-decoder does "
                                         r"not take"):
        Decoder(pe, PositionalEncoding(d_model=32, n_heads=2), n_layers=2, d_ff=64, dropout=0.0)


def test_in_the_length_study_recall_reads_it_on_the_spread_axis_without_the_masked_one(tmp_path) -> None:
    """`-S '+length_task_schemes.recall_causal=[rope,mamba]'`: Mamba's own claim is associative recall (induction
    heads). Its rows are scored plainly and spread, but not masked (nothing can be hidden from a recurrence) nor with
    the attention temperature."""
    from conftest import smoke_raw

    from pelab.params import parse_params
    from pelab.tasks import get_task
    from pelab.tasks.length import data as length_data
    from pelab.tasks.length.evaluate import evaluate, reads_content

    task = get_task("recall_causal")
    cfg = parse_params(smoke_raw(tasks=[], length_tasks=["recall_causal"], length_schemes=["mamba"])).task(
        "recall_causal")
    task.prepare(cfg, tmp_path / "data")
    data = length_data.load(tmp_path / "data")
    model = task.build_model(cfg.model, "mamba", cfg.options("mamba"), 0, task.data_info(data))
    assert reads_content(model)
    rows = evaluate(cfg, model, data, torch.device("cpu"), causal=True,
                    row_length=lambda n: task.row_length(cfg.data, n))
    splits = {r["split"] for r in rows}
    assert {"test", "in", "beyond", "test_spread", "beyond_spread"} <= splits
    assert not [s for s in splits if s.endswith(("_masked", "_logn")) or s == "at_N"]


def test_a_filter_of_one_step_keeps_no_conv_state_and_still_decodes_the_whole_row() -> None:
    torch.manual_seed(0)
    ssm = SelectiveSSM(16, d_state=4, d_conv=1).double()
    x = torch.randn(2, 9, 16, dtype=torch.float64)
    with torch.no_grad():
        whole = ssm(x)
        first, state = ssm.run(x[:, :4])
        assert state["conv"].shape == (2, 16, 0)
        parts = [first] + [ssm.step(x[:, t:t + 1], state) for t in range(4, 9)]
    assert_close(torch.cat(parts, dim=1), whole, rtol=1e-9, atol=1e-10)


def test_its_weights_decay_as_attention_s_but_for_the_state_matrix() -> None:
    from pelab.training.loop import decays

    mamba, rope = lm("mamba"), lm("rope")
    decayed = {n for n, p in mamba.named_parameters() if decays(n, p)}
    mixer = {n for n in decayed if ".token_mixer." in n}
    assert {n.rsplit(".token_mixer.", 1)[1] for n in mixer} == {"in_proj.weight", "conv1d.weight", "x_proj.weight",
                                                                 "dt_proj.weight", "out_proj.weight"}
    assert decayed - mixer == {n for n, p in rope.named_parameters() if decays(n, p) and ".attn." not in n}
