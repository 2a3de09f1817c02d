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
        except click.UsageError as err:  # a bad option value of a subcommand: one line too, not click's three
            report_and_exit(ValueError(err.format_message()))
        except USER_ERRORS as err:
            report_and_exit(err)


class _LazyChoice(click.Choice):
    """A click.Choice whose choices come from a registry on first use, so `pelab --help` never imports torch."""

    def __init__(self, load, what: str, check=None) -> None:
        self._load, self._choices, self._what, self._check = load, None, what, check
        super().__init__([])

    def convert(self, value, param, ctx):
        if self._check is not None:  # the registry's own check: it knows names no list holds (``rope+sink``)
            try:
                return self._check(value)
            except ValueError as error:
                self.fail(str(error), param, ctx)
        if value not in self.choices:
            self.fail(f"unknown {self._what} {value!r}; valid choices: {', '.join(self.choices)}", param, ctx)
        return value

    @property
    def choices(self):
        if self._choices is None:
            self._choices = tuple(self._load())
        return self._choices

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ assigns it; the registry is the source
        pass


def _scheme_names() -> list[str]:
    from pelab.positional import scheme_names

    return scheme_names()


def _check_scheme(name: str) -> str:
    from pelab.positional import check_scheme

    return check_scheme(name)


def _task_names() -> list[str]:
    from pelab.tasks import task_names

    return task_names()


class _Device(click.ParamType):
    """auto | cpu | cuda | cuda:N (pelab.config.check_device, which also rejects CUDA on a CUDA-less machine)."""

    name = "auto|cpu|cuda|cuda:N"

    def convert(self, value, param, ctx):
        from pelab.config import check_device

        try:
            return check_device(str(value))
        except ValueError as err:
            self.fail(str(err), param, ctx)


@click.group(cls=_Group)
@click.version_option(package_name="pelab")
def main() -> None:
    """Positional Encoding Lab: compare positional encodings in Transformers, reproducibly."""


@main.command()
def schemes() -> None:
    """List the registered positional schemes, the slots (embed / rotate / bias / content_bias / attention_weights)
    they use, their options with their defaults (what ``positional.<scheme>`` and ``<task>.positional.<scheme>`` in
    params override) and, where pelab states one, the source it follows."""
    from dataclasses import asdict

    from pelab.positional import SCHEMES, PositionalEncoding, scheme_options
    from pelab.positional.layout import Layout
    from pelab.positional.switched import SWITCHES

    for name, spec in SCHEMES.items():
        cls = spec.cls
        slots = [hook for hook in ("embed", "rotate", "bias", "content_bias", "attention_weights")
                 if getattr(cls, hook) is not getattr(PositionalEncoding, hook)]
        if issubclass(cls, Layout):
            slots = ["per layer"]
        elif cls.layer is not PositionalEncoding.layer:  # FoX's gates, CoPE's tables: the slot is each layer's
            slots = [f"{cls.layer_slot} per layer"]
        options = ", ".join(f"{k}={v}" for k, v in asdict(scheme_options(name)).items()) or "-"
        kind = cls.__name__ + (" (randomized positions)" if spec.randomized else "")
        click.echo(f"{name:15s} {', '.join(slots) or '(no-op)':22s} {kind:40s} options: {options}")
        source = spec.about or getattr(cls, "source", "")
        if source:
            click.echo(f"{'':15s} source: {source}")
        for switch in spec.switches:
            click.echo(f"{'':15s} switch {switch}: {SWITCHES[switch]}")
    click.echo("switches (any scheme as <scheme>+<switch>, e.g. rope+qk_norm):")
    for switch, reference in SWITCHES.items():
        click.echo(f"{switch:15s} {reference}")


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
    from pelab.params import parse_params

    composed = compose_params(conf_dir, list(overrides))
    parse_params(composed, check_cuda=False)
    text = yaml.safe_dump(composed, sort_keys=False)
    if out_path == "-":
        click.echo(text, nl=False)
    else:
        Path(out_path).write_text(text)


@main.command("pipeline")
@click.option("--check", is_flag=True, help="write nothing; exit 1 if a pipeline file is not what it would write")
def pipeline_cmd(check: bool) -> None:
    """Write dvc.yaml and pipelines/<study>/<kind>/dvc.yaml from the study records (pelab/studies.py) and each
    stage's import closure. Run it after adding a study, a task or a module a stage imports."""
    from pelab.pipeline.write import ROOT, pipeline_files, write

    if check:
        stale = [rel for rel, text in pipeline_files().items()
                 if not (ROOT / rel).exists() or (ROOT / rel).read_text() != text]
        if stale:
            raise click.ClickException(f"stale pipeline files (run `pelab pipeline`): {', '.join(stale)}")
        click.echo("the pipeline files are up to date")
        return
    changed = write()
    click.echo(f"wrote {', '.join(changed)}" if changed else "the pipeline files are up to date")


@main.command("run")
@click.option("--task", "task_name", required=True, type=_LazyChoice(_task_names, "task"), help="see `pelab tasks`")
@click.option("--scheme", required=True, type=_LazyChoice(_scheme_names, "positional scheme", _check_scheme),
              help="see `pelab schemes`; <scheme>+<switch> for a switch beside it")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True))
@click.option("--data", "data_dir", default=None, type=click.Path(file_okay=False),
              help="prepared data of the task (default: prepared into OUT/data)")
@click.option("--steps", type=int, default=None, help="override <task>.train.steps")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--device", default=None, type=_Device(), help="default: the params' device")
def run_cmd(task_name: str, scheme: str, seed: int, params_path: str, data_dir: str | None, steps: int | None,
            out_dir: str, device: str | None) -> None:
    """Train and evaluate one (task, scheme, seed) run outside DVC; print its headline metrics."""
    import copy

    import yaml

    from pelab.params import parse_params
    from pelab.positional import check_scheme
    from pelab.runner.evaluate import evaluate_run
    from pelab.runner.train import train_run
    from pelab.studies import STUDIES, study_of
    from pelab.tasks import get_task

    check_scheme(scheme)
    task = get_task(task_name)
    raw = copy.deepcopy(yaml.safe_load(Path(params_path).read_text()) or {})
    home = study_of(type(task).__module__)
    for study in STUDIES:  # this one task and scheme, in the lists of the task's own study; no other study, no tuning
        study.set(raw, study.tasks_key, [task_name] if study is home else [])
        study.set(raw, study.tune_key, [])
    home.set(raw, home.schemes_key, [scheme])
    raw.pop(home.task_schemes_key or "", None)  # no task's own list either
    raw["seeds"] = [seed]
    if steps is not None:
        raw.setdefault(task.params_section, {}).setdefault("train", {})["steps"] = steps
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


@main.command("evaluate")
@click.option("--task", "task_name", required=True, type=_LazyChoice(_task_names, "task"), help="see `pelab tasks`")
@click.option("--scheme", required=True, type=_LazyChoice(_scheme_names, "positional scheme", _check_scheme),
              help="see `pelab schemes`; <scheme>+<switch> for a switch beside it")
@click.option("--params", "params_path", default="params.yaml", show_default=True, type=click.Path(exists=True))
@click.option("--runs", "runs_root", required=True, type=click.Path(exists=True, file_okay=False),
              help="the trained runs: RUNS/<task>/<scheme>/seed_<k>/")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="prepared data of the task")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False))
def evaluate_cmd(task_name: str, scheme: str, params_path: str, runs_root: str, data_dir: str, out_dir: str) -> None:
    """Score every seed's trained run of a (task, scheme) again, outside DVC, as its run stage does after training:
    OUT/seed_<k>/ per seed (records.jsonl and the task's files); OUT appears only when all are done."""
    from pelab.params import load_params
    from pelab.runner.evaluate import evaluate_runs

    evaluate_runs(load_params(params_path), task_name, scheme, runs_root, data_dir, out_dir, echo=click.echo)


@main.command()
@click.argument("overrides", nargs=-1)
@click.option("-j", "--workers", type=click.IntRange(min=1), default=2, show_default=True,
              help="experiments run at once, each with this share of the CPU threads")
@click.option("--timeout-min", type=click.FloatRange(min=0, min_open=True), default=24 * 60, show_default=True,
              help="minutes to wait for the shards before the queue is stopped (with --kill) and this fails")
def parallel(overrides: tuple[str, ...], workers: int, timeout_min: float) -> None:
    """Run the study of OVERRIDES (e.g. `profile=full`) WORKERS stages at a time through DVC: its schemes dealt
    (the length study's tasks) into WORKERS queued experiments (`dvc queue start -j WORKERS`), then `dvc exp run
    OVERRIDES` in the workspace, which restores each finished stage from the run cache. Prints the stages that
    final run still executed."""
    from pelab.parallel import run_in_parallel

    ran = run_in_parallel(list(overrides), workers, timeout_min=timeout_min, echo=click.echo)
    click.echo(f"the final run executed {len(ran)} stage(s): {', '.join(ran) or 'none'}")


@main.command()
@click.argument("overrides", nargs=-1)
@click.option("-n", "--shards", type=click.IntRange(min=1), default=2, show_default=True,
              help="shards of the study, one array task each")
@click.option("--folder", type=click.Path(file_okay=False), default="cluster", show_default=True,
              help="where the shards' workspaces and the scheduler's logs go (on a filesystem every node sees)")
@click.option("--executor", type=click.Choice(["slurm", "local"]), default="slurm", show_default=True,
              help="slurm: one job array (sbatch through submitit); local: submitit's local processes")
@click.option("--partition", default=None, help="the Slurm partition")
@click.option("--gpus-per-shard", type=click.IntRange(min=0), default=0, show_default=True,
              help="GPUs the scheduler gives each shard (CUDA_VISIBLE_DEVICES: no -S device=cuda:i)")
@click.option("--cpus-per-shard", type=click.IntRange(min=1), default=None, help="CPUs per shard")
@click.option("--timeout-min", type=click.IntRange(min=1), default=24 * 60, show_default=True,
              help="each shard's time limit in the scheduler")
def submit(overrides: tuple[str, ...], shards: int, folder: str, executor: str, partition: str | None,
           gpus_per_shard: int, cpus_per_shard: int | None, timeout_min: int) -> None:
    """Submit the study of OVERRIDES (e.g. `profile=full`) as one job array of SHARDS (`pelab parallel`'s dealing,
    each shard a clone of HEAD sharing this workspace's DVC cache), wait for every shard, then `dvc repro` the whole
    study here, which restores what the shards finished. Prints each shard's state and what the final run ran."""
    from pelab.cluster import submit as submit_study

    result = submit_study(list(overrides), shards, folder, cluster=executor, timeout_min=timeout_min,
                          slurm={"slurm_partition": partition} if partition else None,
                          gpus_per_shard=gpus_per_shard, cpus_per_shard=cpus_per_shard, echo=click.echo)
    for index, state in result.states.items():
        click.echo(f"shard {index}: {state}")
    click.echo(f"the final run executed {len(result.final_ran)} stage(s): {', '.join(result.final_ran) or 'none'}")
    if any(state != "done" for state in result.states.values()):
        click.echo("a failed shard's stages ran in the final run; `pelab submit` again trains only what none "
                   "finished")


@main.command()
@click.argument("overrides", nargs=-1)
@click.option("-n", "--shards", type=click.IntRange(min=1), default=2, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="cluster/skypilot", show_default=True)
@click.option("--accelerators", default=None, help="SkyPilot's accelerators per shard, e.g. H100:1")
@click.option("--cloud", default=None, help="SkyPilot's cloud (aws, gcp, kubernetes, slurm...); none: any")
def skypilot(overrides: tuple[str, ...], shards: int, out_dir: str, accelerators: str | None,
             cloud: str | None) -> None:
    """Write the study of OVERRIDES as SkyPilot tasks, one per shard (`pelab submit`'s dealing) and final.yaml,
    which share stages through the repository's default DVC remote: `sky jobs launch OUT/shard-0.yaml`, …, then
    `sky launch OUT/final.yaml`."""
    from pelab.cluster import skypilot_tasks

    for path in skypilot_tasks(list(overrides), shards, out_dir, accelerators=accelerators, cloud=cloud):
        click.echo(f"wrote {path}")


@main.command()
@click.argument("names", nargs=-1)
@click.option("--all-metrics", is_flag=True, help="also the metrics equal in every experiment")
@click.option("--task", default=None, help="only this task's headline metric")
def experiments(names: tuple[str, ...], all_metrics: bool, task: str | None) -> None:
    """Experiments side by side, one column each (`dvc exp show`'s rows, narrow): the params that differ between
    them (not the composed items), then the headline: each claim's verdict and each task's ranking metric per scheme,
    where they differ. NAMES: the experiments (or `workspace`, a baseline's rev) to compare; none: every one that
    ran."""
    from pelab.experiments import show

    click.echo(show(".", all_metrics, task, names))


@main.command()
def claims() -> None:
    """The claims ledger across experiments (`dvc exp show`'s, each with its profile): every claim's verdict and
    measured contrast per experiment, ordered by size, and the profile it starts to hold at."""
    from pelab.experiments import show_ledger

    click.echo(show_ledger("."))


@main.command()
@click.option("--summary", "summary_path", default="reports/summary.json", show_default=True,
              type=click.Path(dir_okay=False))
def summary(summary_path: str) -> None:
    """Print the headline table of the last run (mean ± sd over seeds) from reports/summary.json."""
    import json

    if not Path(summary_path).exists():
        raise FileNotFoundError(f"no summary at {summary_path}; run `dvc repro` (or `dvc exp run -S profile=quick`)")
    for task, schemes in json.loads(Path(summary_path).read_text()).items():
        columns = list(dict.fromkeys((split, metric) for splits in schemes.values()
                                     for split, metrics in splits.items() for metric in metrics))
        seeds = max(stats["n"] for splits in schemes.values() for metrics in splits.values()
                    for stats in metrics.values())
        click.echo(f"{task} (mean ± sd over {seeds} seeds)")
        cells = {scheme: [_cell(splits.get(split, {}).get(metric)) for split, metric in columns]
                 for scheme, splits in schemes.items()}
        titles = [f"{split} {metric}" for split, metric in columns]
        widths = [max(len(t), *(len(row[i]) for row in cells.values())) + 2 for i, t in enumerate(titles)]
        for block in _blocks(widths, SUMMARY_WIDTH - 16):  # as many columns as fit, then the next block
            click.echo(f"  {'scheme':14s}" + "".join(f"{titles[i]:>{widths[i]}s}" for i in block))
            for scheme, row in cells.items():
                click.echo(f"  {scheme:14s}" + "".join(f"{row[i]:>{widths[i]}s}" for i in block))


SUMMARY_WIDTH = 120  # the terminal width `pelab summary` fits, like `dvc metrics show`


def _cell(stats: dict | None) -> str:
    if stats is None:
        return "–"
    return f"{stats['mean']:.3f}" + ("" if stats["sd"] is None else f" ± {stats['sd']:.3f}")


def _blocks(widths: list[int], room: int) -> list[list[int]]:
    """Column indices in consecutive blocks whose widths sum to at most ``room`` (one column at least)."""
    blocks, current, used = [], [], 0
    for i, width in enumerate(widths):
        if current and used + width > room:
            blocks.append(current)
            current, used = [], 0
        current.append(i)
        used += width
    return blocks + ([current] if current else [])


def entry() -> None:
    """The ``pelab`` command (pyproject's script): ``main``, then the process ends without Python's teardown
    (``pelab.exit``: 0.6 s after torch was imported, paid by every CLI call a test or the pipeline makes)."""
    from pelab.exit import run_and_exit

    run_and_exit(main)


if __name__ == "__main__":
    entry()
