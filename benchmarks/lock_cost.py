"""What DVC's lock files cost a run, per pipeline file and as one file.

    python benchmarks/lock_cost.py WORKSPACE [--repeat 3] [--out FILE]

When a stage finishes, DVC rewrites its pipeline file's whole ``dvc.lock``: it parses the file with ruamel's
round-trip loader and dumps it again (``dvc/dvcfile.py``, ``Lockfile.dump_stages``), in pure Python. So a run pays,
per file of n stages, n rewrites of a file that grows as its stages finish.

For every ``dvc.lock`` under WORKSPACE (a finished `dvc repro`) this prints its stages n, its size, the time t of
one rewrite of the whole file (parse and dump, the median of ``--repeat``), and the run's total, taking the file
to grow linearly as its stages finish: t × (n + 1) / 2. Then the same for every stage in one lock file, the
layout before the pipeline was split into one file per study and stage kind, so both layouts are timed on one
machine in one run.
"""

from __future__ import annotations

import io
import json
import statistics
import time
from pathlib import Path

import click


def rewrite_seconds(text: str, repeat: int) -> float:
    """The median time of DVC's rewrite of a lock file holding ``text``: the round-trip parse, then the dump."""
    from dvc.utils.serialize._yaml import _get_yaml, parse_yaml_for_update

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        data = parse_yaml_for_update(text, "dvc.lock")
        _get_yaml().dump(data, io.StringIO())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def stage_count(text: str) -> int:
    import yaml

    return len((yaml.safe_load(text) or {}).get("stages", {}))


def merged(texts: list[str]) -> str:
    """Every stage of ``texts`` in one lock file."""
    import yaml

    stages: dict = {}
    for text in texts:
        stages.update((yaml.safe_load(text) or {}).get("stages", {}))
    return yaml.safe_dump({"schema": "2.0", "stages": stages}, sort_keys=False)


def measure(workspace: Path, repeat: int) -> dict:
    rows = []
    locks = sorted(workspace.rglob("dvc.lock"))
    for path in locks:
        text = path.read_text()
        n, t = stage_count(text), rewrite_seconds(text, repeat)
        rows.append({"file": str(path.relative_to(workspace)), "stages": n, "bytes": len(text.encode()),
                     "rewrite_s": t, "run_s": t * (n + 1) / 2})
    one = merged([p.read_text() for p in locks])
    n, t = stage_count(one), rewrite_seconds(one, repeat)
    return {"files": rows, "split_run_s": sum(r["run_s"] for r in rows),
            "one_file": {"stages": n, "bytes": len(one.encode()), "rewrite_s": t, "run_s": t * (n + 1) / 2}}


@click.command()
@click.argument("workspace", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repeat", default=3, show_default=True, type=click.IntRange(min=1))
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False), help="also write JSON here")
def main(workspace: Path, repeat: int, out_path: str | None) -> None:
    result = measure(workspace, repeat)
    click.echo(f"{'lock file':<44} {'stages':>6} {'KB':>7} {'rewrite s':>9} {'run s':>7}")
    for r in result["files"]:
        click.echo(f"{r['file']:<44} {r['stages']:>6} {r['bytes'] / 1e3:>7.1f} {r['rewrite_s']:>9.3f} "
                   f"{r['run_s']:>7.1f}")
    one = result["one_file"]
    click.echo(f"split into {len(result['files'])} files: {result['split_run_s']:.0f} s of lock rewrites over the run")
    click.echo(f"one file of {one['stages']} stages ({one['bytes'] / 1e3:.0f} KB, {one['rewrite_s']:.2f} s a "
               f"rewrite): {one['run_s']:.0f} s; ratio {one['run_s'] / max(result['split_run_s'], 1e-9):.1f}x")
    if out_path:
        Path(out_path).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
