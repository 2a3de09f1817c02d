"""Typed configuration: ``params.yaml`` -> dataclasses, validated as a whole when it is loaded.

``load_params`` checks every section a study reads — the schemes and their options, every task's data,
model, training and evaluation settings, the device — so bad input fails before any stage trains, with
one line naming the key and the valid choices. Configs hold strings and numbers only (they serialise
beside every checkpoint), and each checks itself in ``__post_init__``.

The sections of one task live in its own folder (``pelab/tasks/<name>/config.py``); this module holds
only what every task shares.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

DEVICES = ("auto", "cpu", "cuda")


def from_dict(cls, data: dict[str, Any] | None, where: str):
    """Build dataclass ``cls`` from a mapping; an unknown key is an error naming ``where`` and the valid keys."""
    data = dict(data or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {unknown} in {where}; valid keys: {', '.join(sorted(known))}")
    return cls(**data)


def to_dict(config: Any) -> dict[str, Any]:
    return asdict(config)


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings every task shares (AdamW, warmup + cosine, clipping, logging)."""

    steps: int = 2000
    batch_size: int = 64
    lr: float = 1e-3
    warmup_steps: int = 100
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    log_every: int = 10
    checkpoints: int = 0  # number of evenly spaced snapshots of the position tables to keep

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "log_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"train.{name} must be >= 1, got {getattr(self, name)}")
        if self.lr <= 0:
            raise ValueError(f"train.lr must be > 0, got {self.lr}")
        if self.warmup_steps < 0 or self.checkpoints < 0:
            raise ValueError(f"train.warmup_steps and train.checkpoints must be >= 0, got "
                             f"{self.warmup_steps}, {self.checkpoints}")


def check_device(device: str) -> str:
    """``auto`` | ``cpu`` | ``cuda`` | ``cuda:N``; asking for CUDA on a machine without it is an error."""
    kind, _, index = device.partition(":")
    if kind not in DEVICES or (index and (kind != "cuda" or not index.isdigit())):
        raise ValueError(f"unknown device {device!r}; valid choices: auto, cpu, cuda, cuda:N")
    if kind == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"device {device!r} requested but no CUDA device is available; use auto or cpu")
        if index and int(index) >= torch.cuda.device_count():
            raise ValueError(f"device {device!r}: only {torch.cuda.device_count()} CUDA device(s) are visible")
    return device


@dataclass(frozen=True)
class Params:
    """The whole of params.yaml, validated. ``task(name)`` is one task's typed configuration."""

    profile: str
    schemes: tuple[str, ...]
    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    device: str
    reference: str  # the scheme every other is compared against, declared before the run (issue: no post-hoc "best")
    positional: dict[str, Any]  # scheme -> its validated Options (the defaults every task starts from)
    task_configs: dict[str, Any]  # task -> TaskConfig
    raw: dict[str, Any]
    length_tasks: tuple[str, ...] = ()  # the length study's tasks (also in ``tasks``)
    length_schemes: tuple[str, ...] = ()  # the length study's schemes

    def schemes_of(self, task: str) -> tuple[str, ...]:
        """The schemes ``task`` is run with: ``length_schemes`` for the length study, else ``pe.schemes``."""
        return self.length_schemes if task in self.length_tasks else self.schemes

    def task(self, name: str):
        if name not in self.task_configs:
            raise ValueError(f"task {name!r} is not in this study's tasks; valid choices: {', '.join(self.tasks)}")
        return self.task_configs[name]


def parse_params(raw: dict[str, Any], *, check_cuda: bool = True) -> Params:
    """Validate a params mapping (the composition of ``conf/``) into ``Params``."""
    from pelab.positional import check_scheme, scheme_names, scheme_options
    from pelab.tasks import get_task, task_names

    raw = dict(raw or {})
    def scheme_list(key: str, values) -> tuple[str, ...]:
        names = tuple(str(s) for s in values or ())
        for name in names:
            check_scheme(name)
        if len(set(names)) != len(names):
            raise ValueError(f"{key} lists a scheme twice: {list(names)}")
        return names

    schemes = scheme_list("pe.schemes", (raw.get("pe") or {}).get("schemes"))
    if not schemes:
        raise ValueError("pe.schemes is empty; list at least one scheme, e.g. pe=all or 'pe.schemes=[none,rope]'")
    length_tasks = tuple(str(t) for t in raw.get("length_tasks") or ())
    length_schemes = scheme_list("length_schemes", raw.get("length_schemes"))
    if length_tasks and not length_schemes:
        raise ValueError("length_schemes is empty while length_tasks is not; list at least one scheme, e.g. "
                         "'length_schemes=[none,rope]', or leave the length study out with 'length_tasks=[]'")
    seeds = tuple(raw.get("seeds") or ())
    if not seeds or not all(isinstance(s, int) and s >= 0 for s in seeds):
        raise ValueError(f"seeds must be a non-empty list of integers >= 0, got {list(seeds)}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {list(seeds)}")
    # `tasks`: the main study's tasks (dvc.yaml stages train@…); `length_tasks`: the length-generalisation study's
    # (train_length@…, pelab/tasks/length). Params.tasks is both, in that order.
    tasks = tuple(str(t) for t in raw.get("tasks") or ()) + length_tasks
    if not tasks:
        raise ValueError(f"tasks and length_tasks are empty; list at least one of: {', '.join(task_names())}")
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"a task is listed twice in tasks + length_tasks: {list(tasks)}")
    device = str(raw.get("device", "auto"))
    check_device(device) if check_cuda else None
    reference = str(raw.get("reference", "sinusoidal"))
    check_scheme(reference)  # a run without it (e.g. pe=alibi) reports no comparisons against it
    positional_raw = dict(raw.get("positional") or {})
    unknown = sorted(set(positional_raw) - set(scheme_names()))
    if unknown:
        raise ValueError(f"unknown scheme(s) {unknown} in positional; valid choices: {', '.join(scheme_names())}")
    positional = {name: scheme_options(name, positional_raw.get(name)) for name in scheme_names()}
    task_configs = {name: get_task(name).config(raw.get(name), length_schemes if name in length_tasks else schemes)
                    for name in tasks}
    return Params(
        profile=str(raw.get("profile", "custom")), schemes=schemes, tasks=tasks, seeds=seeds, device=device,
        reference=reference, positional=positional, task_configs=task_configs, raw=raw,
        length_tasks=length_tasks, length_schemes=length_schemes,
    )


def load_params(path: str | Path = "params.yaml", *, check_cuda: bool = True) -> Params:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no params file at {path}; compose one with `pelab compose --out {path}`")
    with open(path) as f:
        return parse_params(yaml.safe_load(f) or {}, check_cuda=check_cuda)
