"""`pelab`: ad-hoc commands outside DVC (the pipeline itself is `dvc repro` / `dvc exp run`).

Heavy libraries (torch, hydra, pandas) are imported inside the commands that use them.
"""

from __future__ import annotations

from pathlib import Path

import click

from pelab.errors import USER_ERRORS, report_and_exit


class _Group(click.Group):
    """Bad input -> one line naming the value and the valid choices, exit status 2 (pelab.errors)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except USER_ERRORS as err:
            report_and_exit(err)


@click.group(cls=_Group)
@click.version_option(package_name="pelab")
def main() -> None:
    """Positional Encoding Lab: compare positional encodings in Transformers, reproducibly."""


@main.command()
def schemes() -> None:
    """List the registered positional schemes, the slots (embed / rotate / bias) they use and their options."""
    from pelab.positional import POSITIONAL_ENCODINGS, PositionalEncoding, option_names

    for name, cls in POSITIONAL_ENCODINGS.items():
        slots = [hook for hook in ("embed", "rotate", "bias")
                 if getattr(cls, hook) is not getattr(PositionalEncoding, hook)]
        options = ", ".join(option_names(name)) or "-"
        click.echo(f"{name:12s} {', '.join(slots) or '(no-op)':8s}  options: {options:28s} {cls.__name__}")


@main.command()
def tasks() -> None:
    """List the registered tasks."""
    from pelab.tasks import task_names

    for name in task_names():
        click.echo(name)


@main.command("compose")
@click.argument("overrides", nargs=-1)
@click.option("--conf", "conf_dir", default="conf", show_default=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_path", default="-", show_default=True, help="file to write, - for stdout")
def compose_cmd(overrides: tuple[str, ...], conf_dir: str, out_path: str) -> None:
    """Compose params from conf/ with Hydra OVERRIDES (e.g. `pe=rope profile=quick`) and validate them."""
    import yaml

    from pelab.compose import compose_params
    from pelab.config import parse_params

    composed = compose_params(conf_dir, list(overrides))
    parse_params(composed, check_cuda=False)
    text = yaml.safe_dump(composed, sort_keys=False)
    if out_path == "-":
        click.echo(text, nl=False)
    else:
        Path(out_path).write_text(text)


@main.command("run")
@click.option("--task", "task_name", required=True, help="a registered task (see `pelab tasks`)")
@click.option("--scheme", required=True, help="a registered scheme (see `pelab schemes`)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True))
@click.option("--data", "data_dir", default=None, type=click.Path(file_okay=False),
              help="prepared data of the task (default: prepared into OUT/data)")
@click.option("--steps", type=int, default=None, help="override <task>.train.steps")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--device", default=None, help="auto | cpu | cuda | cuda:N (default: params)")
def run_cmd(task_name: str, scheme: str, seed: int, params_path: str, data_dir: str | None, steps: int | None,
            out_dir: str, device: str | None) -> None:
    """Train and evaluate one (task, scheme, seed) run outside DVC; print its headline metrics."""
    import copy

    import yaml

    from pelab.config import parse_params
    from pelab.positional import check_scheme
    from pelab.runner.evaluate import evaluate_run
    from pelab.runner.train import train_run
    from pelab.tasks import get_task

    check_scheme(scheme)
    task = get_task(task_name)
    raw = copy.deepcopy(yaml.safe_load(Path(params_path).read_text()) or {})
    raw["pe"] = {"schemes": [scheme]}
    raw["tasks"] = [task_name]
    raw["seeds"] = [seed]
    if steps is not None:
        raw.setdefault(task_name, {}).setdefault("train", {})["steps"] = steps
    if device is not None:
        raw["device"] = device
    params = parse_params(raw)
    out = Path(out_dir)
    data = Path(data_dir) if data_dir else out / "data"
    if not data.exists():
        task.prepare(params.task(task_name), data)
    train_run(params, task_name, scheme, seed, data, out / "run")
    rows = evaluate_run(params, out / "run", data, out / "results")
    for row in rows:
        if row["length"] == "all" and row["metric"] in task.headline.get(row["split"], []):
            click.echo(f"{task_name} {scheme} seed {seed} {row['split']}: {row['metric']}={row['value']:.4f}")


@main.command()
@click.option("--records", "records_path", default="reports/records.csv", show_default=True,
              type=click.Path(dir_okay=False))
def summary(records_path: str) -> None:
    """Print the headline table of the last run (mean ± sd over seeds) from reports/records.csv."""
    import pandas as pd

    from pelab.tasks import get_task

    if not Path(records_path).exists():
        raise FileNotFoundError(f"no records at {records_path}; run `dvc repro` (or `dvc exp run -S profile=quick`)")
    records = pd.read_csv(records_path, dtype={"length": str})
    overall = records[records["length"] == "all"]
    for task, rows in overall.groupby("task", sort=False):
        headline = get_task(str(task)).headline
        columns = [(split, metric) for split, metrics in headline.items() for metric in metrics
                   if not rows[(rows["split"] == split) & (rows["metric"] == metric)].empty]
        click.echo(f"{task} (mean ± sd over {rows['seed'].nunique()} seeds)")
        click.echo("  " + f"{'scheme':12s}" + "".join(f"{f'{split} {metric}':>30s}" for split, metric in columns))
        for scheme, group in rows.groupby("pe", sort=False):
            cells = []
            for split, metric in columns:
                values = group[(group["split"] == split) & (group["metric"] == metric)]["value"]
                sd = values.std() if len(values) > 1 else float("nan")
                cells.append(f"{values.mean():.3f} ± {sd:.3f}" if len(values) else "–")
            click.echo("  " + f"{scheme:12s}" + "".join(f"{c:>30s}" for c in cells))


if __name__ == "__main__":
    main()
