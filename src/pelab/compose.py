"""Compose params.yaml from the Hydra config groups in conf/, as `dvc exp run -S group=option` does."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def compose_params(conf_dir: str | Path = "conf", overrides: list[str] | None = None) -> dict[str, Any]:
    """The dict DVC writes to params.yaml for these Hydra overrides (e.g. ["pe=alibi", "profile=quick"]).

    A Hydra error (an unknown group option, a malformed override) becomes one ValueError line.
    """
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    try:
        with initialize_config_dir(config_dir=str(Path(conf_dir).resolve()), version_base=None):
            cfg = compose(config_name="config", overrides=list(overrides or []))
        return OmegaConf.to_container(cfg, resolve=True)
    except (HydraException, OmegaConfBaseException) as err:
        raise ValueError(_one_line(str(err), overrides or [])) from None


def _one_line(message: str, overrides: list[str]) -> str:
    """Hydra's multi-line message -> its first line plus the valid choices it lists."""
    lines = [line.strip() for line in message.strip().splitlines()]
    text = f"bad override in {overrides}: {' '.join(lines[0].split())}"
    if any(line.startswith("Available options") for line in lines):
        start = next(i for i, line in enumerate(lines) if line.startswith("Available options")) + 1
        choices = []
        for line in lines[start:]:
            if not line or line.startswith("Config search path"):
                break
            choices.append(line)
        text += f"; valid choices: {', '.join(choices)}"
    return text
