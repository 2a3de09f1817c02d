"""The copy task (../references copy-task post): ``1 7 2 <copy> _ _ _`` -> ``1 7 2 <copy> 1 7 2``.

Encoder-only: the model reads the whole padded input and predicts every output token at once.
The offset of ``<copy>`` varies, so the model must use attention; order matters, so it must use
positions.
"""

from __future__ import annotations

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


def sample_unique_sequences(
    n: int,
    min_len: int,
    max_len: int,
    n_digits: int,
    generator: torch.Generator,
    exclude: set[tuple[int, ...]] = frozenset(),
) -> list[tuple[int, ...]]:
    """Draw ``n`` distinct digit sequences, length uniform in [min_len, max_len], none in ``exclude``.

    Short lengths have few distinct sequences (n_digits**L), so duplicates are redrawn and the
    final mix leans towards longer sequences once the short ones are used up.
    """
    capacity = sum(n_digits**length for length in range(min_len, max_len + 1)) - len(exclude)
    if n > capacity:
        raise ValueError(f"cannot draw {n} distinct sequences of length {min_len}..{max_len}: only {capacity} exist")
    seen: set[tuple[int, ...]] = set()
    out: list[tuple[int, ...]] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 100 * n + 1000:
            raise ValueError(f"could not draw {n} distinct sequences of length {min_len}..{max_len}; lower the count")
        length = int(torch.randint(min_len, max_len + 1, (1,), generator=generator))
        seq = tuple(torch.randint(0, n_digits, (length,), generator=generator).tolist())
        if seq in seen or seq in exclude:
            continue
        seen.add(seq)
        out.append(seq)
    return out


def make_copy_dataset(task: CopyDataConfig) -> dict[str, CopySplit]:
    """Train, held-out test (no sequence seen in training) and longer-than-training test, drawn with ``task.seed``."""
    generator = torch.Generator().manual_seed(task.seed)
    train = sample_unique_sequences(task.n_train, task.min_len, task.max_len, task.n_digits, generator)
    test = sample_unique_sequences(task.n_test, task.min_len, task.max_len, task.n_digits, generator, exclude=set(train))
    long = sample_unique_sequences(task.n_test_long, task.long_min_len, task.long_max_len, task.n_digits, generator)
    return {
        "train": encode_examples(train, task.context, task),
        "test": encode_examples(test, task.context, task),
        "test_long": encode_examples(long, task.long_context, task),
    }


def save_copy_dataset(splits: dict[str, CopySplit], path) -> None:
    torch.save({name: split.to_dict() for name, split in splits.items()}, path)


def load_copy_dataset(path) -> dict[str, CopySplit]:
    raw = torch.load(path, weights_only=True)
    return {name: CopySplit(**tensors) for name, tensors in raw.items()}
