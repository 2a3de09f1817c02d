"""The tiny reverse task's scoring (``pelab.tasks.scoring``): exact match on its test split."""

from __future__ import annotations

from pelab.tasks.scoring import Scoring as BaseScoring


class Scoring(BaseScoring):
    def evaluate(self, cfg, model, data, device, out_dir):
        logits, _ = model(data["test"]["inputs"].to(device))
        exact = (logits.argmax(-1).cpu() == data["test"]["targets"]).all(dim=1).float().mean()
        return [{"split": "test", "length": "all", "metric": "exact_match", "value": float(exact)}]
