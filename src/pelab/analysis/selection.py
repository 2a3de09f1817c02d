"""Which step each run was scored at: every run keeps its weights at its logged step of lowest validation loss
(``pelab.training.loop.BestWeights``), and records that step, the steps it trained and its validation loss there and
at the last step (``pelab.runner.train``). Per (task, scheme) over seeds: the chosen steps, both losses, and two
flags - seeds still improving at the last logged step (under-trained: more steps would likely score better) and
seeds whose last validation loss is above their best by more than ``OVERFIT_MARGIN`` (overfitting: scored at the
last step they would rank lower)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pelab.analysis.paired import seed_map

OVERFIT_MARGIN = 0.05  # relative rise of the last validation loss over the best that flags a seed as overfitting


@dataclass(frozen=True)
class Selection:
    """One (task, scheme) over its seeds; lists in seed order."""

    best_steps: list[int]
    steps: int
    best_loss: list[float]
    last_loss: list[float]

    @property
    def improving(self) -> int:
        """Seeds whose best step is the last: their validation loss was still falling when training stopped."""
        return sum(step >= self.steps for step in self.best_steps)

    @property
    def overfitting(self) -> int:
        """Seeds whose last validation loss is more than ``OVERFIT_MARGIN`` above their best."""
        return sum(last > best * (1 + OVERFIT_MARGIN) for best, last in zip(self.best_loss, self.last_loss))


def selection(records: pd.DataFrame, task: str, scheme: str) -> Selection | None:
    """The scored steps of a (task, scheme)'s seeds from the tidy records; None where no run recorded them."""
    best_steps, steps = seed_map(records, task, scheme, "train", "best_step"), \
        seed_map(records, task, scheme, "train", "steps")
    best, last = seed_map(records, task, scheme, "val", "loss"), seed_map(records, task, scheme, "val", "loss_last")
    seeds = sorted(set(best_steps) & set(best) & set(last))
    if not seeds or not steps:
        return None
    return Selection([int(best_steps[s]) for s in seeds], int(max(steps.values())), [best[s] for s in seeds],
                     [last[s] for s in seeds])
