"""Compose params.yaml from the Hydra config groups in conf/, as `dvc exp run -S group=option` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def compose_params(conf_dir: str | Path = "conf", overrides: list[str] | None = None) -> dict[str, Any]:
    """The dict DVC writes to params.yaml for these Hydra overrides (e.g. ["pe=alibi", "profile=quick"])."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base=None):
        cfg = compose(config_name="config", overrides=list(overrides or []))
    return OmegaConf.to_container(cfg, resolve=True)
