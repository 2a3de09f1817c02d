"""The copy task (../references copy-task post): ``1 7 2 <copy> _ _ _`` -> ``1 7 2 <copy> 1 7 2``.

Encoder-only: the model reads the whole padded input and predicts every output token at once.
The offset of ``<copy>`` varies, so the model must use attention; order matters, so it must use
positions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pelab.tasks.copy.config import CopyDataConfig


@dataclass(frozen=True)
class CopySplit:
    inputs: torch.Tensor  # (N, T) int64
    targets: torch.Tensor  # (N, T) int64
    lengths: torch.Tensor  # (N,) int64: number of digits before <copy>

    def __len__(self) -> int:
        return self.inputs.shape[0]

    def to_dict(self) -> dict[str, torch.Tensor]:
        return {"inputs": self.inputs, "targets": self.targets, "lengths": self.lengths}


def encode_examples(sequences: list[tuple[int, ...]], context: int, task: CopyDataConfig) -> CopySplit:
    """Lay out digit sequences as (input, target) rows of width ``context``."""
    n = len(sequences)
    inputs = torch.full((n, context), task.pad_token, dtype=torch.long)
    targets = torch.full((n, context), task.pad_token, dtype=torch.long)
    lengths = torch.tensor([len(s) for s in sequences], dtype=torch.long)
    for row, seq in enumerate(sequences):
        digits = torch.tensor(seq, dtype=torch.long)
        length = len(seq)
        if 2 * length + 1 > context:
            raise ValueError(f"a copy sequence of length {length} needs {2 * length + 1} positions, context is {context}")
        inputs[row, :length] = digits
        inputs[row, length] = task.copy_token
        targets[row, :length] = digits
        targets[row, length] = task.copy_token
        targets[row, length + 1 : 2 * length + 1] = digits
    return CopySplit(inputs, targets, lengths)


def distinct_sequences(length: int, n: int, n_digits: int, generator: torch.Generator) -> list[tuple[int, ...]]:
    """``n`` distinct digit sequences of one length, in random order: small spaces are enumerated and shuffled,
    large ones sampled with rejection of repeats."""
    capacity = n_digits**length
    if n > capacity:
        raise ValueError(f"cannot draw {n} distinct sequences of length {length}: only {capacity} exist")
    if capacity <= 100_000:
        codes = torch.randperm(capacity, generator=generator)[:n].tolist()
        return [tuple((code // n_digits**i) % n_digits for i in reversed(range(length))) for code in codes]
    seen: set[tuple[int, ...]] = set()
    out: list[tuple[int, ...]] = []
    while len(out) < n:
        seq = tuple(torch.randint(0, n_digits, (length,), generator=generator).tolist())
        if seq not in seen:
            seen.add(seq)
            out.append(seq)
    return out


def stratified_counts(min_len: int, max_len: int, n_train: int, n_test: int, n_digits: int,
                      holdout_share: float) -> dict[int, tuple[int, int]]:
    """{length: (train, test)}: each length asks for an equal share of both splits; a short length that has
    too few distinct sequences holds ``holdout_share`` of them out (at least one) and trains on the rest."""
    k = max_len - min_len + 1
    counts = {}
    for length in range(min_len, max_len + 1):
        capacity = n_digits**length
        test = min(math.ceil(n_test / k), max(1, math.floor(holdout_share * capacity)))
        train = min(math.ceil(n_train / k), capacity - test)
        if train < 1:
            raise ValueError(f"copy.data: length {length} has {capacity} sequences, too few to hold {test} out and "
                             f"train on the rest; raise n_digits or min_len")
        counts[length] = (train, test)
    return counts


def make_copy_dataset(task: CopyDataConfig) -> dict[str, CopySplit]:
    """Train, held-out test and longer-than-training test, drawn with ``task.seed``.

    Stratified by length: every length of the training range is in both splits in equal numbers where it has
    enough distinct sequences (``stratified_counts``), and no test sequence occurs in training. The longer
    test has an equal share per length too. Each split is shuffled.
    """
    generator = torch.Generator().manual_seed(task.seed)
    train, test = [], []
    counts = stratified_counts(task.min_len, task.max_len, task.n_train, task.n_test, task.n_digits,
                               task.holdout_share)
    for length, (n_train, n_test) in counts.items():
        sequences = distinct_sequences(length, n_train + n_test, task.n_digits, generator)
        test += sequences[:n_test]
        train += sequences[n_test:]
    k_long = task.long_max_len - task.long_min_len + 1
    long = [seq for length in range(task.long_min_len, task.long_max_len + 1)
            for seq in distinct_sequences(length, math.ceil(task.n_test_long / k_long), task.n_digits, generator)]

    def shuffled(items: list) -> list:
        return [items[i] for i in torch.randperm(len(items), generator=generator).tolist()]

    return {
        "train": encode_examples(shuffled(train), task.context, task),
        "test": encode_examples(shuffled(test), task.context, task),
        "test_long": encode_examples(shuffled(long), task.long_context, task),
    }


def save_copy_dataset(splits: dict[str, CopySplit], path) -> None:
    torch.save({name: split.to_dict() for name, split in splits.items()}, path)


def load_copy_dataset(path) -> dict[str, CopySplit]:
    raw = torch.load(path, weights_only=True)
    return {name: CopySplit(**tensors) for name, tensors in raw.items()}
