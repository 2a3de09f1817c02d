"""`pelab`: ad-hoc commands outside DVC (the pipeline itself is `dvc repro` / `dvc exp run`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import yaml

from pelab.config import load_params
from pelab.positional import POSITIONAL_ENCODINGS


class _Group(click.Group):
    """Bad input -> one line naming the value and the valid choices, exit status 2."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (ValueError, FileNotFoundError) as err:
            click.echo(f"error: {err}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="pelab")
def main() -> None:
    """Positional Encoding Lab: compare positional encodings in Transformers, reproducibly."""


@main.command()
def schemes() -> None:
    """List the registered positional schemes and the slots (embed / rotate / bias) they use."""
    from pelab.positional import PositionalEncoding

    for name, cls in POSITIONAL_ENCODINGS.items():
        slots = [hook for hook in ("embed", "rotate", "bias") if getattr(cls, hook) is not getattr(PositionalEncoding, hook)]
        click.echo(f"{name:12s} {', '.join(slots) or '(no-op)':8s}  {cls.__name__}")


@main.command("compose")
@click.argument("overrides", nargs=-1)
@click.option("--conf", "conf_dir", default="conf", show_default=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_path", default="-", show_default=True, help="file to write, - for stdout")
def compose_cmd(overrides: tuple[str, ...], conf_dir: str, out_path: str) -> None:
    """Compose params from conf/ with Hydra OVERRIDES (e.g. `pe=rope profile=quick`)."""
    from pelab.compose import compose_params

    text = yaml.safe_dump(compose_params(conf_dir, list(overrides)), sort_keys=False)
    if out_path == "-":
        click.echo(text, nl=False)
    else:
        Path(out_path).write_text(text)


@main.command("train-copy")
@click.option("--scheme", required=True, help="a registered scheme (see `pelab schemes`)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True))
@click.option("--steps", type=int, default=None, help="override copy.train.steps")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--device", default=None, help="auto | cpu | cuda (default: params)")
def train_copy(scheme: str, seed: int, params_path: str, steps: int | None, out_dir: str, device: str | None) -> None:
    """Train one scheme with one seed on the copy task and print its test metrics."""
    import dataclasses

    from pelab import copy_study
    from pelab.positional import check_scheme
    from pelab.tasks.copy_task import copy_metrics, load_copy_dataset, make_copy_dataset, save_copy_dataset

    check_scheme(scheme)
    params = load_params(params_path)
    raw = dict(params.raw)
    if steps is not None:
        raw["copy"] = {**raw["copy"], "train": {**raw["copy"]["train"], "steps": steps}}
    params = dataclasses.replace(params, seeds=(seed,), raw=raw)  # re-runs the checks in __post_init__
    out = Path(out_dir)
    data_dir = out / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    save_copy_dataset(make_copy_dataset(params.copy.task, seed), copy_study.data_file(data_dir, seed))
    copy_study.build_and_check(params, scheme, seed)
    copy_study.train_one(params, scheme, seed, data_dir, out / f"seed_{seed}", device or params.device)
    model = copy_study.load_trained(params, scheme, out, seed)
    splits = load_copy_dataset(copy_study.data_file(data_dir, seed))
    for name in ("test", "test_long"):
        m = copy_metrics(copy_study.predict(model, splits[name]), splits[name])
        click.echo(f"{scheme} seed {seed} {name}: exact_match={float(m['exact_match'].mean()):.4f} "
                   f"token_accuracy={float(m['token_accuracy'].mean()):.4f}")


if __name__ == "__main__":
    main()
