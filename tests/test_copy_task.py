"""The copy-task data: layout, splits, determinism, metrics."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from pelab.tasks.copy.config import CopyDataConfig as CopyTaskConfig
from pelab.tasks.copy.data.generate import (
    distinct_sequences,
    encode_examples,
    load_copy_dataset,
    save_copy_dataset,
    stratified_counts,
)
from pelab.tasks.copy.data.generate import (
    make_copy_dataset as _make,
)
from pelab.tasks.copy.evaluate import copy_metrics


def make_copy_dataset(task: CopyTaskConfig, seed: int):
    """The dataset drawn with data seed ``seed``."""
    return _make(replace(task, seed=seed))

TASK = CopyTaskConfig()  # digits 0..9, <copy> = 10, pad = 11
C, P = TASK.copy_token, TASK.pad_token
SMALL = CopyTaskConfig(
    context=12, min_len=1, max_len=5, long_context=20, long_min_len=6, long_max_len=9,
    n_train=300, n_test=100, n_test_long=50,
)


def digits_of(split, row: int) -> tuple[int, ...]:
    return tuple(split.inputs[row, : int(split.lengths[row])].tolist())


def test_special_tokens() -> None:
    assert (C, P, TASK.vocab_size) == (10, 11, 12)


def test_encode_examples_layout() -> None:
    split = encode_examples([(1, 7, 2), (5,), (0, 0, 9, 4)], context=10, task=TASK)
    expected_inputs = torch.tensor([
        [1, 7, 2, C, P, P, P, P, P, P],
        [5, C, P, P, P, P, P, P, P, P],
        [0, 0, 9, 4, C, P, P, P, P, P],
    ])
    expected_targets = torch.tensor([
        [1, 7, 2, C, 1, 7, 2, P, P, P],
        [5, C, 5, P, P, P, P, P, P, P],
        [0, 0, 9, 4, C, 0, 0, 9, 4, P],
    ])
    assert_close(split.inputs, expected_inputs, rtol=0, atol=0)
    assert_close(split.targets, expected_targets, rtol=0, atol=0)
    assert_close(split.lengths, torch.tensor([3, 1, 4]), rtol=0, atol=0)
    assert len(split) == 3
    assert split.inputs.dtype == split.targets.dtype == split.lengths.dtype == torch.long


def test_encode_examples_exact_fit_and_too_long() -> None:
    split = encode_examples([(3, 1, 4)], context=7, task=TASK)  # 2·3 + 1 = 7
    assert split.targets[0].tolist() == [3, 1, 4, C, 3, 1, 4]
    with pytest.raises(ValueError, match="length 4 needs 9 positions, context is 8"):
        encode_examples([(1, 2, 3, 4)], context=8, task=TASK)


def test_distinct_sequences() -> None:
    g = torch.Generator().manual_seed(0)
    seqs = distinct_sequences(2, 95, 10, g)  # 100 exist: enumerated and shuffled
    assert len(seqs) == len(set(seqs)) == 95 and all(len(s) == 2 and all(0 <= d < 10 for d in s) for s in seqs)
    large = distinct_sequences(6, 300, 10, g)  # 10^6 exist: sampled
    assert len(set(large)) == 300 and all(len(s) == 6 for s in large)
    with pytest.raises(ValueError, match="cannot draw 11 distinct sequences of length 1: only 10 exist"):
        distinct_sequences(1, 11, 10, g)


def split_counts(split) -> dict[int, int]:
    lengths, counts = split.lengths.unique(return_counts=True)
    return dict(zip(lengths.tolist(), counts.tolist()))


def test_dataset_shapes_and_ranges() -> None:
    data = make_copy_dataset(SMALL, seed=0)
    assert set(data) == {"train", "test", "test_long"}
    counts = stratified_counts(SMALL.min_len, SMALL.max_len, SMALL.n_train, SMALL.n_test, SMALL.n_digits, 0.2)
    assert counts == {1: (8, 2), 2: (60, 20), 3: (60, 20), 4: (60, 20), 5: (60, 20)}
    for name, n, width, lo, hi in [
        ("train", 248, SMALL.context, SMALL.min_len, SMALL.max_len),
        ("test", 82, SMALL.context, SMALL.min_len, SMALL.max_len),
        ("test_long", 52, SMALL.long_context, SMALL.long_min_len, SMALL.long_max_len),
    ]:
        split = data[name]
        assert split.inputs.shape == split.targets.shape == (n, width)
        assert int(split.lengths.min()) >= lo and int(split.lengths.max()) <= hi
        rebuilt = encode_examples([digits_of(split, r) for r in range(n)], width, SMALL)
        assert_close(split.targets, rebuilt.targets, rtol=0, atol=0)  # every row is laid out as encode_examples does


def test_every_length_is_held_out_in_equal_numbers_where_it_can_be() -> None:
    """The review's case: training used up every sequence of lengths 1-2, so the test had none of them."""
    quick = CopyTaskConfig(n_train=10000, n_test=1000, n_test_long=1000)  # the quick profile's sizes
    data = make_copy_dataset(quick, seed=0)
    train, test, long = (split_counts(data[s]) for s in ("train", "test", "test_long"))
    assert set(test) == set(train) == set(range(1, 10))
    assert test[1] == 2 and test[2] == 20 and test[3] == 112 and all(test[L] == 112 for L in range(3, 10))
    assert train[1] == 8 and train[2] == 80 and all(train[L] == 1112 for L in range(4, 10))
    assert set(long.values()) == {100}  # 1000 sequences over lengths 10-19
    assert test[1] >= 1 and train[1] >= 1  # a length with ten sequences is still in both splits


def test_batches_are_length_balanced() -> None:
    from pelab.tasks.copy.data import CopyData
    from pelab.tasks.copy.task import CopyTask

    task = CopyTask()
    cfg = task.config({"data": {"n_train": 300, "n_test": 50}, "train": {"batch_size": 4000}})
    data = CopyData(make_copy_dataset(cfg.data, 0), {})
    _, targets = task.batches(cfg, data, seed=0)(0)
    lengths = ((targets == cfg.data.copy_token).int().argmax(dim=1))  # position of <copy> = length
    counts = torch.bincount(lengths, minlength=10)[1:10].float()
    assert counts.min() > 0.8 * counts.mean()  # each of the 9 lengths ~ 1/9 of the batch, length 1 included


def test_test_split_is_disjoint_from_train() -> None:
    data = make_copy_dataset(SMALL, seed=1)
    train = {digits_of(data["train"], r) for r in range(len(data["train"]))}
    test = {digits_of(data["test"], r) for r in range(len(data["test"]))}
    assert len(train) == len(data["train"]) and len(test) == len(data["test"])  # no duplicates within a split
    assert train.isdisjoint(test)


def test_same_seed_same_dataset_different_seed_different() -> None:
    a, b, c = make_copy_dataset(SMALL, 7), make_copy_dataset(SMALL, 7), make_copy_dataset(SMALL, 8)
    for name in a:
        for field in ("inputs", "targets", "lengths"):
            assert_close(getattr(a[name], field), getattr(b[name], field), rtol=0, atol=0)
        assert not torch.equal(a[name].inputs, c[name].inputs)


def test_dataset_does_not_touch_the_global_rng() -> None:
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    make_copy_dataset(SMALL, 0)
    assert_close(torch.rand(3), expected, rtol=0, atol=0)


def test_save_load_round_trip(tmp_path: Path) -> None:
    data = make_copy_dataset(SMALL, 3)
    save_copy_dataset(data, tmp_path / "d.pt")
    loaded = load_copy_dataset(tmp_path / "d.pt")
    assert set(loaded) == set(data)
    for name in data:
        for field in ("inputs", "targets", "lengths"):
            assert_close(getattr(loaded[name], field), getattr(data[name], field), rtol=0, atol=0)


def test_copy_metrics_on_hand_made_predictions() -> None:
    split = encode_examples([(1, 7, 2), (3, 4), (5, 6, 7, 8), (9,)], context=10, task=TASK)
    predictions = split.targets.clone()
    # row 0: perfect
    predictions[1, 3] = 0  # row 1: first copied digit wrong (target [3, 4, C, 3, 4, P, ...])
    predictions[2, 0] = 0  # row 2: input part wrong, copied part right
    predictions[2, 9] = 5  # ... and a pad position wrong: exact match fails, token accuracy does not
    predictions[3, 2:] = 9  # row 3: copied digit right, but every pad position after it wrong
    m = copy_metrics(predictions, split)
    assert_close(m["exact_match"], torch.tensor([1.0, 0.0, 0.0, 0.0]), rtol=0, atol=0)
    assert_close(m["token_accuracy"], torch.tensor([1.0, 0.5, 1.0, 1.0]), rtol=0, atol=0)


def test_copy_metrics_counts_only_the_copied_part() -> None:
    split = encode_examples([(1, 7, 2), (4, 4)], context=8, task=TASK)
    predictions = split.targets.clone()
    predictions[0, 4:7] = torch.tensor([1, 0, 0])  # 1 of 3 copied digits right
    predictions[1, 3:5] = 0  # both copied digits wrong
    m = copy_metrics(predictions, split)
    assert_close(m["exact_match"], torch.tensor([0.0, 0.0]), rtol=0, atol=0)
    assert_close(m["token_accuracy"], torch.tensor([1 / 3, 0.0]))
    # shifting the copy one position left (a classic failure) scores zero on row 0's copied part
    shifted = split.targets.clone()
    shifted[0, 3:6] = torch.tensor([1, 7, 2])
    shifted[0, 6] = P
    assert_close(copy_metrics(shifted, split)["token_accuracy"][0], torch.tensor(0.0))
