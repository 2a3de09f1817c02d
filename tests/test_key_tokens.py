"""The LM's key tokens (LongPPL's rule with a position-free evaluator) and the context-ablation curve: the vectorised
suffix matches against the definition written out, the rule against LongPPL's code, the EM weights against a grid
search of the likelihood, key tokens where a passage repeats beyond L and none where nothing does, key-token
perplexity against a direct mean, and a one-layer NoPE model blind to the order of the tokens it reads."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pelab.model.config import ModelConfig
from pelab.positional import scheme_options
from pelab.tasks.lm.evaluate import ablation, ablation_distances, key_mean, key_rows, target_nll, windows
from pelab.tasks.lm.key_tokens import (ALPHA, BETA, K_SEARCH, _matches_by_search, fit_weights, is_key, key_tokens,
                                       matches)
from pelab.tasks.lm.model import build_lm

CPU = torch.device("cpu")


@pytest.mark.parametrize("trial", range(24))
def test_the_vectorised_matches_equal_the_definition_target_by_target(trial):
    """Longest repeated suffix and the copy share, long and short context, on random text over 2–5 tokens (many
    repeats), every third with a planted passage repeated."""
    rng = np.random.default_rng(trial)
    vocab, n = int(rng.integers(2, 6)), int(rng.integers(80, 140))
    tokens = rng.integers(0, vocab, n)
    if trial % 3 == 0:
        tokens[60:80] = tokens[5:25]
    long = int(rng.integers(8, 60))
    short = int(rng.integers(2, long))
    targets = np.arange(long, n)
    fast, slow = matches(tokens, targets, long, short, block=7), _matches_by_search(tokens, targets, long, short)
    for field in ("k_long", "copy_long", "k_short", "copy_short"):
        np.testing.assert_allclose(getattr(fast, field), getattr(slow, field), err_msg=field)
    assert (fast.k_short <= fast.k_long).all()  # the short context is part of the long one


def test_a_repeat_longer_than_the_search_is_read_as_its_cap():
    tokens = np.tile(np.arange(100), 3)  # every suffix repeats 100 tokens back
    found = matches(tokens, np.array([250]), 200, 50)
    assert found.k_long[0] == K_SEARCH and found.copy_long[0] == 1.0
    assert found.k_short[0] == 0  # nothing repeats within 50 tokens


def test_the_rule_is_longppls_on_losses():
    """``find_key_token``: (loss_short − loss_full) > α and loss_full < −β, the losses being −log p."""
    rng = np.random.default_rng(0)
    long, short = -rng.exponential(2.0, 1000), -rng.exponential(4.0, 1000)
    loss_full, loss_short = -long, -short
    expected = ((loss_short - loss_full) > ALPHA) & (loss_full < -BETA)
    np.testing.assert_array_equal(is_key(long, short), expected)
    assert 0 < expected.sum() < 1000


def test_the_em_weights_maximise_the_mixtures_likelihood():
    """Per suffix length, the weight EM finds is the grid's best for log(λ·copy + (1 − λ)·background)."""
    rng = np.random.default_rng(1)
    k = rng.integers(0, 5, 4000)
    copy = np.where(rng.random(4000) < 0.3 + 0.15 * k, 1.0, rng.random(4000) * 0.2)
    background = rng.random(4000) * 0.3 + 0.01
    weights = fit_weights(k, copy, background)
    assert weights[0] == 0.0
    grid = np.linspace(0.0, 0.999, 2000)
    for length in range(1, 5):
        mine = k == length
        likelihood = [np.log(g * copy[mine] + (1 - g) * background[mine]).sum() for g in grid]
        assert weights[length] == pytest.approx(grid[int(np.argmax(likelihood))], abs=2e-3)


def corpus(seed: int, repeat: bool):
    """A 40-token vocabulary: training and validation text of random tokens, two test speeches of 2N + 1 = 257 tokens
    of tokens 20..39; with ``repeat`` a passage of 24 tokens from 10..19 (seen nowhere else) at 140 and again at 220,
    80 tokens later: beyond L = 32, within T = 128."""
    generator = torch.Generator().manual_seed(seed)
    train, val = (torch.randint(0, 40, (4000,), generator=generator) for _ in range(2))
    test = [torch.randint(20, 40, (257,), generator=generator) for _ in range(2)]
    if repeat:
        passage = torch.randint(10, 20, (24,), generator=generator)
        test[0][140:164] = passage
        test[0][220:244] = passage
    return train, val, test


def test_key_tokens_are_the_passage_repeated_beyond_l():
    train, val, test = corpus(0, repeat=True)
    key = key_tokens(train, val, test, 40, 32, 128)
    first = (key.masks[0].nonzero().flatten() + 129).tolist()  # the targets are tokens 129..256
    assert first and all(221 <= t < 244 for t in first)  # inside the repeat, past its first token
    assert len(first) >= 15  # most of it: the repeat is predictable from its second token on
    assert not key.masks[1].any()
    assert key.count == len(first) and key.share == pytest.approx(len(first) / 256)


def test_random_text_has_no_key_tokens_and_records_no_perplexity_over_them():
    train, val, test = corpus(1, repeat=False)
    key = key_tokens(train, val, test, 40, 32, 128)
    assert key.count == 0
    nll = [torch.ones(128, dtype=torch.float64) for _ in test]
    assert key_rows("sliding", 64, nll, key) == [{"split": "sliding", "length": 64, "metric": "key_tokens", "value": 0}]


def test_key_token_perplexity_is_the_mean_over_the_key_targets_of_their_sliding_read():
    """``key_mean`` over ``target_nll``: each key target's −log p read directly from its sliding window."""
    torch.manual_seed(0)
    net = build_lm("alibi", 40, ModelConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32), scheme_options("alibi"),
                   seed=0).eval()
    train, val, test = corpus(0, repeat=True)
    key = key_tokens(train, val, test, 40, 32, 128)
    window, stride = 64, 32
    nll, _ = target_nll(net, test, window, stride, 3, CPU)
    mean, count = key_mean(nll, key)
    direct = []
    for doc, mask in zip(test, key.masks):
        for start, first in windows(128, 128, window, stride):
            with torch.no_grad():
                logits, _ = net(doc[None, start:start + window])
            logp = logits[0].double().log_softmax(-1)
            for place in range(first, window):
                target = start + place + 1  # the token this place predicts
                if mask[target - 129]:
                    direct.append(-float(logp[place, doc[target]]))
    assert count == key.count == len(direct) and mean == pytest.approx(sum(direct) / len(direct), rel=1e-6)


def test_the_ablation_curve_of_a_one_layer_nope_model_is_blind_to_order():
    """A one-layer causal model without positions reads its last position as a function of the set of tokens before
    it: shuffling the far tokens changes nothing, dropping them does; every run draws the same shuffles."""
    net = build_lm("none", 40, ModelConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32), scheme_options("none"),
                   seed=0).eval()
    _, _, test = corpus(0, repeat=True)
    cfg = SimpleNamespace(data=SimpleNamespace(context=32),
                          eval=SimpleNamespace(ablation_targets=5, batch_size=4, multiples=(1, 2, 4)))
    rows = ablation(net, cfg, SimpleNamespace(test=test), CPU)
    value = {(r["length"], r["metric"]): r["value"] for r in rows}
    assert ablation_distances(32, 128) == [8, 16, 32, 64] and ablation_distances(50, 200) == [12, 25, 50, 100]
    assert value["all", "context"] == 128 and value["all", "targets"] == 10
    for d in (8, 16, 32, 64):
        assert value[d, "shuffle"] == pytest.approx(0.0, abs=1e-5)
        assert abs(value[d, "drop"]) > 1e-4
    assert ablation(net, cfg, SimpleNamespace(test=test), CPU) == rows
    assert math.isfinite(value["all", "nll"])


def test_a_rope_model_reads_the_order_of_what_it_sees():
    net = build_lm("rope", 40, ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32), scheme_options("rope"),
                   seed=0).eval()
    _, _, test = corpus(0, repeat=True)
    cfg = SimpleNamespace(data=SimpleNamespace(context=32),
                          eval=SimpleNamespace(ablation_targets=5, batch_size=4, multiples=(1, 2)))
    value = {(r["length"], r["metric"]): r["value"] for r in ablation(net, cfg, SimpleNamespace(test=test), CPU)}
    assert value["all", "context"] == 64  # 4L not evaluated: the longest T
    assert all(abs(value[d, "shuffle"]) > 1e-5 for d in (8, 16, 32))
