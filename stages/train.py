"""Stage train@<task>-<scheme>-<seed>: train one run (atomically: a killed stage leaves nothing behind)."""

import click
from _common import one_line_errors, params_option, task_option

from pelab.config import load_params
from pelab.runner.train import train_run


@click.command()
@params_option
@task_option
@click.option("--scheme", required=True)
@click.option("--seed", required=True, type=int)
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--live", "live_dir", default=None, type=click.Path(file_okay=False),
              help="DVCLive directory for the training curves, written as they are logged")
@one_line_errors
def main(params_path: str, task_name: str, scheme: str, seed: int, data_dir: str, out_dir: str,
         live_dir: str | None) -> None:
    cost = train_run(load_params(params_path), task_name, scheme, seed, data_dir, out_dir, live_dir=live_dir)
    click.echo(f"trained {task_name} {scheme} seed {seed}: final loss {cost['final_loss']:.4f}, "
               f"{cost['wall_time_s']:.1f} s on {cost['device']}")


if __name__ == "__main__":
    main()
