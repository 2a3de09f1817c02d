"""The LM at a size where it reads its text many times, scored at its best validation step and at its last: does
the ranking at L move, does the 4L/L ratio move, and is the passkey retrieved at the chosen step?

The CPU analogue of the full profile's LM (issue 42: 24 epochs of its text, validation loss bottoming out a third of
the way in): the quick profile's model on the first ``--documents`` training speeches, so that ``--steps`` read
the text many times. Each (scheme, seed, dropout) trains once; its weights at the best logged step are what the
pipeline scores, and the same loop's last-step weights are kept beside them (``keep_last``) and scored the same way.

    python benchmarks/lm_budget.py --out benchmarks/results/lm_budget_cpu.json [--steps 1500] [--documents 24]

Writes per run: epochs, best step, validation loss at best and last, ``val_passkey`` by step, and at both steps the
test perplexity at L and 4L (strided sliding window, stride T/2) and passkey accuracy at L (greedy).
"""

from __future__ import annotations

import copy
import json
import platform
import time
from pathlib import Path

import click
import torch

from pelab.compose import compose_params
from pelab.params import parse_params
from pelab.tasks import get_task
from pelab.tasks.lm.evaluate import evaluate
from pelab.training.loop import train

ROOT = Path(__file__).resolve().parents[1]


def scores(rows: list[dict], context: int) -> dict[str, float]:
    pick = {(r["split"], r["metric"]): r["value"] for r in rows if r["length"] == "all"}
    return {"ppl_L": pick[("at_L", "ppl_sliding")], "ppl_4L": pick[("at_4L", "ppl_sliding")],
            "ratio_4L": pick[("at_4L", "ppl_ratio")], "passkey_L": pick[("at_L", "passkey")],
            "passkey_beyond": pick.get(("beyond", "passkey"), float("nan"))}


@click.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--steps", default=1500, show_default=True)
@click.option("--epochs", type=float, default=None, help="budget in passes over the text (overrides --steps)")
@click.option("--documents", type=int, default=24, show_default=True,
              help="training speeches (fewer: more epochs; 0: all)")
@click.option("--schemes", default="alibi,sinusoidal,rope", show_default=True)
@click.option("--seeds", default="0,1", show_default=True)
@click.option("--dropouts", default="0.0,0.1", show_default=True)
@click.option("--passkey-shares", default="0.25", show_default=True)
@click.option("--size", default="", help="model/data overrides, e.g. d_model=128,n_layers=4,context=128,lr=0.002")
@click.option("--log-every", default=50, show_default=True)
@click.option("--data", "data_dir", type=click.Path(path_type=Path), default=Path("/tmp/pelab-lm-budget"))
def main(out: Path, steps: int, epochs: float | None, documents: int, schemes: str, seeds: str, dropouts: str,
         passkey_shares: str, size: str, log_every: int, data_dir: Path) -> None:
    raw = compose_params(ROOT / "conf", ["profile=quick"])
    raw.update({"tasks": [], "length_tasks": [], "lm_tasks": ["lm"], "lm_schemes": schemes.split(",")})
    overrides = dict(kv.split("=") for kv in size.split(",") if kv)
    sections = {"data": ("context", "vocab_size"), "model": ("d_model", "n_layers", "n_heads", "d_ff"),
                "train": ("lr", "batch_size", "warmup_steps")}
    raw["lm"]["data"] = {**raw["lm"]["data"], "train_documents": documents or None}
    raw["lm"]["train"] = {**raw["lm"]["train"], "steps": steps, "epochs": epochs, "log_every": log_every,
                          "warmup_steps": 50}
    for section, keys in sections.items():
        for key in keys:
            if key in overrides:
                value = overrides.pop(key)
                raw["lm"][section][key] = float(value) if "." in value else int(value)
    if overrides:
        raise click.BadParameter(f"unknown --size keys {sorted(overrides)}; valid: {sum(sections.values(), ())}")
    raw["lm"]["eval"] = {**raw["lm"]["eval"], "multiples": [1, 4], "passkey_trials": 10}
    data_dir = data_dir / f"{raw['lm']['data']['vocab_size']}-{documents}"
    task = get_task("lm")
    results, started = [], time.time()
    for dropout, share in ((float(d), float(p)) for d in dropouts.split(",") for p in passkey_shares.split(",")):
        raw["lm"]["model"] = {**raw["lm"]["model"], "dropout": dropout}
        raw["lm"]["train"] = {**raw["lm"]["train"], "passkey_share": share}
        cfg = parse_params(raw).task("lm")
        if not (data_dir / "tokens.pt").exists():
            task.prepare(cfg, data_dir)
        data = task.load_data(data_dir)
        cfg = task.budget(cfg, data)
        validate = task.validation(cfg, data, torch.device("cpu"))
        for scheme in schemes.split(","):
            for seed in (int(s) for s in seeds.split(",")):
                model = task.build_model(cfg.model, scheme, cfg.options(scheme), seed, task.data_info(data))
                last: dict[str, torch.Tensor] = {}

                def on_log(step: int, m: torch.nn.Module) -> dict[str, float]:
                    if step == cfg.train.steps:
                        last.update({k: v.clone() for k, v in m.state_dict().items()})
                    return validate(m)

                torch.manual_seed(seed)
                tick = time.time()
                result = train([model], [task.batches(cfg, data, seed)], task.loss(cfg), cfg.train,
                               torch.device("cpu"), on_log=on_log)[0]
                at_best = scores(evaluate(cfg, model, data, torch.device("cpu")), cfg.data.context)
                final = copy.deepcopy(model)
                final.load_state_dict(last)
                at_last = scores(evaluate(cfg, final, data, torch.device("cpu")), cfg.data.context)
                results.append({
                    "scheme": scheme, "seed": seed, "dropout": dropout, "passkey_share": share,
                    "steps": cfg.train.steps, "size": size,
                    "epochs": task.train_summary(cfg, data)["epochs"], "best_step": result.best_step,
                    "val_loss_best": result.best_val_loss, "val_loss_last": result.final_val_loss,
                    "curve": [{k: row[k] for k in ("step", "loss", "val_loss", "val_passkey")}
                              for row in result.history],
                    "at_best": at_best, "at_last": at_last, "seconds": time.time() - tick})
                print(json.dumps({k: v for k, v in results[-1].items() if k != "curve"}), flush=True)
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(json.dumps({
                    "machine": platform.processor() or platform.machine(), "torch": torch.__version__,
                    "train_tokens": len(data.train), "wall_s": time.time() - started, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
