"""Per-seed numbers of a finished study, one row per scheme, as markdown: what `benchmarks/results/*_quick.md` quote.

    python benchmarks/scheme_summary.py reports/records.csv [--schemes none,rope,...]

Length tasks: token accuracy within and beyond N (per seed), effective length (per seed), exact match beyond N
(mean ± sd), the in-context floor beyond N; the LM: sliding perplexity at L and 4L, their ratio, passkey at L (per
seed). Each with its training wall time (the stack of seeds, from the run records).
"""

from __future__ import annotations

import argparse
import statistics

import pandas as pd


def per_seed(records: pd.DataFrame, task: str, scheme: str, split: str, metric: str) -> list[float]:
    rows = records[(records["task"] == task) & (records["pe"] == scheme) & (records["split"] == split)
                   & (records["metric"] == metric) & (records["length"].astype(str) == "all")]
    return [float(v) for v in rows.sort_values("seed")["value"]]


def cell(values: list[float], digits: int = 3) -> str:
    return " / ".join(f"{v:.{digits}f}" for v in values) if values else "–"


def mean_sd(values: list[float], digits: int = 3) -> str:
    if not values:
        return "–"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def train_seconds(records: pd.DataFrame, task: str, scheme: str) -> str:
    """Training wall time of the scheme's runs: each seed's record holds its stack's time."""
    values = per_seed(records, task, scheme, "train", "wall_time_s")
    return f"{max(values):.0f} s" if values else "–"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("records")
    parser.add_argument("--schemes", default=None, help="comma-separated, in this order (default: every scheme)")
    args = parser.parse_args()
    records = pd.read_csv(args.records, low_memory=False)
    schemes = args.schemes.split(",") if args.schemes else list(dict.fromkeys(records["pe"]))
    for task in dict.fromkeys(records["task"]):
        present = [s for s in schemes if ((records["task"] == task) & (records["pe"] == s)).any()]
        if task == "lm":
            print("\n### lm\n\n| scheme | sliding ppl at L | sliding ppl at 4L | 4L / L (mean ± sd) | passkey at L | train |")
            print("|---|---|---|---|---|---|")
            for s in present:
                ratio = per_seed(records, task, s, "at_4L", "ppl_ratio")
                print(f"| `{s}` | {cell(per_seed(records, task, s, 'at_L', 'ppl_sliding'), 2)} | "
                      f"{cell(per_seed(records, task, s, 'at_4L', 'ppl_sliding'), 2)} | {mean_sd(ratio, 3)} | "
                      f"{cell(per_seed(records, task, s, 'at_L', 'passkey'), 2)} | {train_seconds(records, task, s)} |")
            continue
        floor = per_seed(records, task, present[0], "task", "floor_beyond") if present else []
        chance = per_seed(records, task, present[0], "task", "chance") if present else []
        facts = ([f"chance {chance[0]:.3f}"] if chance else []) + ([f"in-context floor beyond N {floor[0]:.3f}"]
                                                                    if floor else [])
        print(f"\n### {task}" + (f" ({', '.join(facts)})" if facts else "") + "\n")
        print("| scheme | token accuracy within N | token accuracy beyond N | effective length | exact match beyond N"
              " | train |")
        print("|---|---|---|---|---|---|")
        for s in present:
            effective = per_seed(records, task, s, "effective", "input_length")
            print(f"| `{s}` | {mean_sd(per_seed(records, task, s, 'in', 'token_accuracy'))} | "
                  f"{cell(per_seed(records, task, s, 'beyond', 'token_accuracy'))} | "
                  f"{' / '.join(f'{e:.0f}' for e in effective) or '–'} | "
                  f"{mean_sd(per_seed(records, task, s, 'beyond', 'exact_match'))} | {train_seconds(records, task, s)} |")


if __name__ == "__main__":
    main()
