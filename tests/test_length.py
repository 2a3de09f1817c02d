"""The length-generalisation study: generators, layouts, the causal decoder's generation, the ranking, and
the tasks through the one runner."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from conftest import smoke_raw

from pelab import io
from pelab.aggregate import aggregate
from pelab.analysis.length_ranking import ranking, reciprocal_ranks
from pelab.config import parse_params
from pelab.runner.evaluate import evaluate_run
from pelab.runner.train import train_run
from pelab.tasks import get_task
from pelab.tasks.length.config import LengthDataConfig, LengthModelConfig
from pelab.tasks.length.data import make_splits
from pelab.tasks.length.data.layout import IGNORE, decoder_rows, encoder_rows
from pelab.tasks.length.data.problems import PROBLEMS, binary_addition, special_tokens
from pelab.tasks.length.evaluate import generate
from pelab.tasks.length.model import build_length_model

CFG = LengthDataConfig(n_symbols=3, train_max=5, test_max=12, n_train=600, n_test=10)


def as_int(bits: list[int]) -> int:
    """Least significant bit first."""
    return sum(b << i for i, b in enumerate(bits))


@pytest.mark.parametrize("problem", sorted(PROBLEMS))
def test_splits_cover_every_length_and_test_sequences_never_occur_in_training(problem):
    splits = make_splits(CFG, PROBLEMS[problem])
    assert sorted(splits["test"]) == list(range(1, CFG.test_max + 1))
    assert sorted(splits["train"]) == list(range(1, CFG.train_max + 1))
    base = PROBLEMS[problem].alphabet(CFG.n_symbols)
    for n, test in splits["test"].items():
        assert test.shape[1] == PROBLEMS[problem].source_length(n) and int(test.max()) < base
        assert len({tuple(r) for r in test.tolist()}) == len(test)  # distinct
        if n in splits["train"]:
            train = {tuple(r) for r in splits["train"][n].tolist()}
            assert len(train) == len(splits["train"][n]) and not train & {tuple(r) for r in test.tolist()}
    assert len(splits["test"][CFG.test_max]) == CFG.n_test
    again = make_splits(CFG, PROBLEMS[problem])  # the data seed fixes everything
    assert all(torch.equal(again["test"][n], splits["test"][n]) for n in splits["test"])


def test_targets_are_the_reversal_the_duplicate_and_the_binary_sum():
    sources = torch.tensor([[0, 2, 1, 1]])
    q, a = PROBLEMS["reverse"].question_answer(sources, 3)
    assert q.tolist() == [[0, 2, 1, 1]] and a.tolist() == [[1, 1, 2, 0]]
    q, a = PROBLEMS["duplicate"].question_answer(sources, 3)
    assert a.tolist() == [[0, 2, 1, 1, 0, 2, 1, 1]]
    generator = torch.Generator().manual_seed(0)
    for n in (1, 3, 17, 70):  # 70 bits: beyond int64, the sum must still be exact
        bits = torch.randint(0, 2, (32, 2 * n), generator=generator)
        q, a = binary_addition(bits, plus=9)
        assert q.shape == (32, 2 * n + 1) and (q[:, n] == 9).all() and a.shape == (32, n + 1)
        for row, out in zip(bits.tolist(), a.tolist()):
            assert as_int(out) == as_int(row[:n]) + as_int(row[n:])


def test_encoder_and_decoder_layouts_put_the_answer_where_it_is_read():
    question, answer = torch.tensor([[0, 1, 1]]), torch.tensor([[1, 1, 0]])
    tok = special_tokens(2)
    tokens, targets = encoder_rows(question, answer, 2)
    assert tokens.tolist() == [[0, 1, 1, tok["sep"], tok["blank"], tok["blank"], tok["blank"]]]
    assert targets.tolist() == [[IGNORE] * 4 + [1, 1, 0]]
    tokens, targets = decoder_rows(question, answer, 2)
    assert tokens.tolist() == [[0, 1, 1, tok["sep"], 1, 1]]  # the last answer token is never an input
    assert targets.tolist() == [[IGNORE] * 3 + [1, 1, 0]]  # SEP (position 3) predicts the first answer token


@pytest.mark.parametrize("scheme", ["none", "sinusoidal", "rope", "alibi", "t5"])
def test_greedy_generation_equals_the_teacher_forced_pass_over_its_own_output(scheme):
    """With a correct causal mask the model's prediction at a position cannot depend on later tokens, so
    re-reading the generated answer in one pass predicts exactly the generated tokens."""
    cfg = LengthModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)
    from pelab.positional import scheme_options

    model = build_length_model(scheme, 5, cfg, scheme_options(scheme), seed=3, causal=True).eval()
    prompt = torch.randint(0, 5, (4, 7), generator=torch.Generator().manual_seed(1))
    answer = generate(model, prompt, 6)
    with torch.no_grad():
        again = model(torch.cat([prompt, answer[:, :-1]], dim=1)).argmax(-1)[:, prompt.shape[1] - 1:]
    assert torch.equal(again, answer)


def test_reciprocal_ranks_and_the_ranking_over_tasks_and_seeds():
    assert reciprocal_ranks({"a": 0.9, "b": 0.5, "c": 0.5}) == {"a": 1.0, "b": 1 / 2.5, "c": 1 / 2.5}
    rows = []
    for seed in (0, 1):
        for task, scores in {"t1": {"a": 0.9, "b": 0.8, "c": 0.1}, "t2": {"a": 0.2, "b": 0.7, "c": 0.1}}.items():
            for pe, v in scores.items():
                rows.append({"task": task, "pe": pe, "seed": seed, "value": v + 0.01 * seed})
    rank = ranking(pd.DataFrame(rows))
    assert list(rank.index) == ["a", "b", "c"] or list(rank.index) == ["b", "a", "c"]
    assert rank.loc["a", "mrr"] == pytest.approx((1 + 1 / 2) / 2) == rank.loc["b", "mrr"]
    assert rank.loc["c", "mrr"] == pytest.approx(1 / 3) and rank.loc["c", "mrr_sd"] == 0.0
    assert rank.loc["a", "first"] == 0.5 and rank.loc["c", "first"] == 0.0


def test_length_tasks_run_through_the_runner_and_aggregate(tmp_path):
    raw = smoke_raw(tasks=[], length_tasks=["reverse", "duplicate_causal"], seeds=[0, 1],
                    pe={"schemes": ["none", "alibi"]})
    params = parse_params(raw)
    for task in params.tasks:
        get_task(task).prepare(params.task(task), tmp_path / "data" / task)
        for scheme in params.schemes:
            for seed in params.seeds:
                run = tmp_path / f"runs/{task}/{scheme}/seed_{seed}"
                train_run(params, task, scheme, seed, tmp_path / "data" / task, run, device="cpu")
                evaluate_run(params, run, tmp_path / "data" / task, tmp_path / f"results/{task}/{scheme}/seed_{seed}",
                             device="cpu")
    aggregate(params, tmp_path / "runs", tmp_path / "results", tmp_path / "metrics", tmp_path / "summary.json",
              tmp_path / "records.csv", tmp_path / "plots")
    records = pd.read_csv(tmp_path / "records.csv", dtype={"length": str})
    cfg = params.task("reverse").data
    per_length = records[(records["task"] == "reverse") & (records["split"] == "test") & (records["pe"] == "alibi")
                         & (records["seed"] == 0) & (records["metric"] == "token_accuracy")]
    assert sorted(per_length["length"].astype(int)) == list(range(1, cfg.test_max + 1))
    metrics = io.read_json(tmp_path / "metrics/duplicate_causal/none.json")
    assert set(metrics) == {"exact", "exact_long", "token_long"} and 0.0 <= metrics["token_long"] <= 1.0
