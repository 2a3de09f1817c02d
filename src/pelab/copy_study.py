"""The copy-task study: prepare data per seed, train one scheme over every seed, evaluate it.

Each function is what one DVC stage runs; every path comes from the caller (dvc.yaml).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from pelab import io
from pelab.config import Params, to_dict
from pelab.model.copy_model import CopyTransformer, build_copy_model
from pelab.tasks.copy_task import CopySplit, copy_metrics, load_copy_dataset, make_copy_dataset, save_copy_dataset
from pelab.training.accounting import run_cost
from pelab.training.loop import autocast, pick_device, train

TASK = "copy"
VAL_EXAMPLES = 256  # held-out examples behind the validation-loss curve


def data_file(data_dir: str | Path, seed: int) -> Path:
    return Path(data_dir) / f"seed_{seed}.pt"


def prepare(params: Params, out_dir: str | Path) -> None:
    """Write one dataset per seed: train, held-out test, and longer-than-training test."""
    task = params.copy.task
    with io.atomic_dir(out_dir) as tmp:
        for seed in params.seeds:
            save_copy_dataset(make_copy_dataset(task, seed), data_file(tmp, seed))
        io.write_json(tmp / "task.json", to_dict(task))


def _loss(model: CopyTransformer, batch: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, int]:
    inputs, targets = batch
    logits, _ = model(inputs)  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten()), targets.numel()


@torch.no_grad()
def held_out_loss(model: CopyTransformer, split: CopySplit, device: torch.device, batch_size: int = 1024) -> float:
    """Mean per-token cross-entropy on a held-out split: the validation curve. Nothing is selected on it."""
    model.eval()
    total, count = 0.0, 0
    for start in range(0, len(split), batch_size):
        rows = slice(start, start + batch_size)
        batch = (split.inputs[rows].to(device), split.targets[rows].to(device))
        with autocast(device):
            loss, n_tokens = _loss(model, batch)
        total += float(loss) * n_tokens
        count += n_tokens
    return total / count


def _position_table_snapshot(model: CopyTransformer) -> dict[str, torch.Tensor]:
    """The learned position table (if the scheme has one), for the PCA-over-training figure."""
    return {name: p.detach().cpu().clone() for name, p in model.pe.named_parameters()}


def build_and_check(params: Params, scheme: str, seed: int) -> CopyTransformer:
    """Build the model for ``scheme``; fail before training if it cannot encode the lengths we use."""
    cfg = params.copy
    model = build_copy_model(scheme, cfg.task.vocab_size, cfg.model, params.positional, seed)
    model.pe.check_length(max(cfg.task.context, cfg.task.long_context))
    return model


def train_one(params: Params, scheme: str, seed: int, data_dir: str | Path, out_dir: str | Path, device: str = "auto") -> None:
    """Train ``scheme`` with ``seed`` and write model.pt, history.csv, train_stats.json, config.json.

    history.csv logs the training loss and ``val_loss``, the loss on the held-out test split, at every log step.
    """
    cfg = params.copy
    dev = pick_device(device)
    model = build_and_check(params, scheme, seed)
    splits = load_copy_dataset(data_file(data_dir, seed))
    train_split, test = splits["train"], splits["test"]
    # The validation curve reads a fixed slice of the held-out test split: cheap enough for every log step.
    held_out = CopySplit(test.inputs[:VAL_EXAMPLES], test.targets[:VAL_EXAMPLES], test.lengths[:VAL_EXAMPLES])
    order = torch.Generator().manual_seed(seed)

    def next_batch(step: int):
        idx = torch.randint(0, len(train_split), (cfg.train.batch_size,), generator=order)
        return train_split.inputs[idx], train_split.targets[idx]

    result = train(
        model, next_batch, _loss, cfg.train, dev, desc=f"copy {scheme} seed {seed}",
        snapshot=_position_table_snapshot, on_log=lambda step, m: {"val_loss": held_out_loss(m, held_out, dev)},
    )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.cpu().state_dict(), out / "model.pt")
    if result.snapshots and result.snapshots[0][1]:
        torch.save(result.snapshots, out / "position_snapshots.pt")
    io.write_csv(out / "history.csv", result.history)
    io.write_json(out / "train_stats.json", run_cost(model, result, dev))
    io.write_json(
        out / "config.json",
        {"task": TASK, "scheme": scheme, "seed": seed, "profile": params.profile,
         "positional": to_dict(params.positional), **{k: to_dict(v) for k, v in vars(cfg).items()}},
    )


def train_scheme(params: Params, scheme: str, data_dir: str | Path, out_dir: str | Path, device: str = "auto") -> None:
    """Train every seed of ``scheme`` into ``out_dir/seed_<k>/``, replacing ``out_dir`` only on success."""
    for seed in params.seeds:  # validate every seed's model before spending time on any
        build_and_check(params, scheme, seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    with io.atomic_dir(out_dir) as tmp:
        for seed in params.seeds:
            train_one(params, scheme, seed, data_dir, tmp / f"seed_{seed}", device)


def load_trained(params: Params, scheme: str, run_dir: str | Path, seed: int) -> CopyTransformer:
    model = build_copy_model(scheme, params.copy.task.vocab_size, params.copy.model, params.positional, seed)
    model.load_state_dict(torch.load(Path(run_dir) / f"seed_{seed}" / "model.pt", weights_only=True))
    return model.eval()


@torch.no_grad()
def predict(model: CopyTransformer, split: CopySplit, batch_size: int = 512) -> torch.Tensor:
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(split), batch_size):
        inputs = split.inputs[start : start + batch_size].to(device)
        with autocast(device):
            logits, _ = model(inputs)
        out.append(logits.argmax(-1).cpu())
    return torch.cat(out)  # (N, T)


def evaluate_scheme(params: Params, scheme: str, data_dir: str | Path, run_dir: str | Path, out_dir: str | Path) -> None:
    """Write ``out_dir/records.jsonl``: tidy rows {task, pe, seed, split, length, metric, value} for
    every seed, split and length ("all" = the whole split) plus each run's training cost; and
    ``out_dir/curves.csv``: the training loss per logged step of every seed."""
    rows, curves = [], []
    for seed in params.seeds:
        model = load_trained(params, scheme, run_dir, seed)
        splits = load_copy_dataset(data_file(data_dir, seed))
        for split_name in ("test", "test_long"):
            split = splits[split_name]
            per_example = copy_metrics(predict(model, split), split)
            base = {"task": TASK, "pe": scheme, "seed": seed, "split": split_name}
            for metric, values in per_example.items():
                rows.append({**base, "length": "all", "metric": metric, "value": float(values.mean())})
                for length in split.lengths.unique().tolist():
                    chosen = split.lengths == length
                    rows.append({**base, "length": int(length), "metric": metric, "value": float(values[chosen].mean())})
        stats = io.read_json(Path(run_dir) / f"seed_{seed}" / "train_stats.json")
        for metric in ("params_total", "params_without_positional", "wall_time_s", "tokens_per_s", "peak_memory_mb", "final_loss"):
            rows.append({"task": TASK, "pe": scheme, "seed": seed, "split": "train", "length": "all",
                         "metric": metric, "value": float(stats[metric])})
        for row in io.read_csv(Path(run_dir) / f"seed_{seed}" / "history.csv"):
            curves.append({"task": TASK, "pe": scheme, "seed": seed, **row})
    with io.atomic_dir(out_dir) as tmp:
        io.write_jsonl(tmp / "records.jsonl", rows)
        io.write_csv(tmp / "curves.csv", curves)
