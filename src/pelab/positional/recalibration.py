"""The recalibration methods (issue 56): a context extension put in place for a short fine-tune at M·L and kept for
every evaluation length, as the extension papers judge their methods (the fine-tune itself: ``tasks/lm/recalibrate.py``,
``runner/recalibrate.py``). Their zero-shot readings are ``rope_extensions.MENU``'s; the fine-tuned model's trained
length is M·L, so each is fixed at s = M:

* ``long``: no extension, rows of M·L tokens: the control every method is judged against (the fine-tune alone), and
  what a scheme that needs no extension (ALiBi, NoPE) is fine-tuned with.
* ``pi``: position interpolation, θ/s (Chen et al. 2023, https://arxiv.org/abs/2306.15595, eq. 3).
* ``ntk``: NTK-aware base scaling, base → base·s^(d/(d−2)) (YaRN §3.2, eq. 16; HF ``dynamic`` at factor 1 read at
  M·L).
* ``yarn``: YaRN at s, NTK-by-parts and its attention temperature (Peng et al. 2023, https://arxiv.org/abs/2309.00071,
  §3.2–3.4).
* ``pose``: PI at s, trained on rows of L tokens at positional skip-wise positions (Zhu et al., ICLR 2024,
  https://arxiv.org/abs/2309.10400; ``tasks/lm/recalibrate.pose_batch``), at the same steps as the others: 1/M of
  their tokens (its claim is that efficiency).
* ``pose_tokens``: the same for M times the steps, about the others' tokens: whether PoSE's gap to them is its
  positions or its fewer tokens.
* ``drope``: DroPE (Gelberg et al. 2025, Extending the Context of Pretrained LLMs by Dropping Their Positional
  Embeddings, https://arxiv.org/abs/2512.12167; reference SakanaAI/DroPE): RoPE dropped after training (the model
  read with no positions at all, NoPE's module: ``none``), then a short recalibration at the trained length L, not
  M·L (the paper's point: no long-context fine-tune), at the others' steps and batch, so on rows of L it reads 1/M
  of their tokens. Its "before" is the run with RoPE dropped and no recalibration; its "after" is judged against the
  run as trained (no fine-tune at L keeps RoPE). On a run trained with QK-norm (``rope+qk_norm``) it is not the
  reference's ``qk_norm_nope``: that adds QK-norm at the drop (one RMSNorm over all heads' channels, learned during
  recalibration), where ours is per head and trained from the start.

Each method's "before" is the run as trained read with the same module at the same factor (``<scheme>+PI-untuned`` …;
PoSE's is PI's; ``long``'s the run itself), so that before and after differ by the fine-tune alone (the zero-shot menu,
``rope_extensions.MENU``, reads each at the factor a user would set for the row instead).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pelab.positional.base import PositionalEncoding
from pelab.positional.rope_extensions import extend


@dataclass(frozen=True)
class Method:
    """One recalibration method: records under split suffix ``suffix``, shown as the pseudo-scheme
    ``<scheme>+<label>``; ``rope_type``: the HF extension in place (None: the scheme as trained), applied where the
    scheme has RoPE's extensions (``PositionalEncoding.variants``); ``pose``: rows of L tokens with skip-wise
    positions."""

    name: str
    suffix: str
    label: str
    rope_type: str | None = None
    pose: bool = False
    # M times the fine-tune's steps: PoSE's rows are 1/M as long, so at equal steps it reads 1/M of the tokens the
    # others read (its claim is that efficiency); this one reads about as many tokens as they do
    equal_tokens: bool = False
    # the method whose module, put on the run as trained (no fine-tune), is this one's "before": the same module at
    # the same factor (PoSE's is PI's); None: the run as trained
    before: str | None = None
    # the positions dropped: the module in place is NoPE's (``none``), for RoPE's runs (DroPE)
    drop: bool = False
    # fine-tuned at the trained length, not M times it (DroPE's recalibration)
    at_trained_length: bool = False

    @property
    def before_method(self) -> Method | None:
        """The method named by ``before``."""
        return None if self.before is None else BY_NAME[self.before]

    def sources(self) -> tuple[Path, ...]:
        """The files a fine-tune with this method executes of the methods: this module and RoPE's extensions (part
        of a fine-tuned run's identity, ``runner.recalibrate``)."""
        return Path(__file__), Path(inspect.getsourcefile(extend))

    @property
    def untuned_suffix(self) -> str:
        """The split suffix of the run as trained read with this method's module (``before`` == ``name``)."""
        return self.suffix.removesuffix("tuned") + "untuned"

    @property
    def untuned_label(self) -> str:
        return self.label.removesuffix("tuned") + "untuned"

    def applies_to(self, pe: PositionalEncoding) -> bool:
        return (self.rope_type is None and not self.drop) or pe.variants == "rope_extensions"

    def module(self, trained: PositionalEncoding, context: int, multiple: int) -> PositionalEncoding:
        """The positional module the fine-tune and every evaluation length read, fixed at s = ``multiple``; NoPE's,
        with the trained module's width, heads and direction, where the method drops the positions."""
        if self.drop:
            from pelab.positional.registry import build_positional_encoding

            return build_positional_encoding("none", d_model=trained.d_model, n_heads=trained.n_heads,
                                             causal=trained.causal)
        if self.rope_type is None:
            return trained
        # dynamic at factor 1 read at M·L is NTK-aware scaling at s = M (rope_extensions.scaled_inverse_frequencies)
        factor = 1.0 if self.rope_type == "dynamic" else float(multiple)
        return extend(trained, self.rope_type, factor, context, multiple * context)


# suffixes end in "tuned" so that none ends with a zero-shot variant's (``analysis.variants.with_variants``); the
# untuned readings in "untuned"
METHODS = (
    Method("long", "_longtuned", "long-tuned"),
    Method("pi", "_pituned", "PI-tuned", "linear", before="pi"),
    Method("ntk", "_ntktuned", "NTK-tuned", "dynamic", before="ntk"),
    Method("yarn", "_yarntuned", "yarn-tuned", "yarn", before="yarn"),
    Method("pose", "_posetuned", "PoSE-tuned", "linear", pose=True, before="pi"),
    Method("pose_tokens", "_posetokenstuned", "PoSE-tokens-tuned", "linear", pose=True, before="pi",
           equal_tokens=True),
    Method("drope", "_dropetuned", "DroPE-tuned", before="drope", drop=True, at_trained_length=True),
)
BY_NAME = {method.name: method for method in METHODS}


def method(name: str) -> Method:
    if name not in BY_NAME:
        raise ValueError(f"unknown recalibration method {name!r}; valid choices: {', '.join(BY_NAME)}")
    return BY_NAME[name]


WARMUP_SHARE = 0.05  # of the fine-tune's steps (PI's 20 of 1,000, YaRN's 20 of 400)
LOGS = 5  # validation points over the fine-tune (each run keeps the best)


def finetune_train(train: Any, settings: Any, method: Method | None = None) -> Any:
    """A fine-tune's training settings (a ``TrainConfig``; ``settings``: ``tasks.recalibration``'s
    ``RecalibrationSettings``): a share ``recalibrate_share`` of the run's (budgeted) steps at ``recalibrate_lr`` times
    its rate, warmup ``WARMUP_SHARE`` of them, ``LOGS`` validation points, no snapshots; batch size, weight decay and
    clipping the run's. ``method.equal_tokens``: M times the steps."""
    steps = max(1, round(settings.recalibrate_share * train.steps))
    if method is not None and method.equal_tokens:
        steps *= int(settings.recalibrate_multiple)
    return dataclasses.replace(train, steps=steps, lr=train.lr * settings.recalibrate_lr,
                               warmup_steps=math.ceil(WARMUP_SHARE * steps), log_every=max(1, steps // LOGS),
                               checkpoints=0)


def methods_for(cfg: Any, scheme: str, causal: bool) -> list[Method]:
    """The methods of ``cfg.eval.recalibrate_methods`` (a task config whose ``eval`` is ``RecalibrationSettings``)
    that apply to ``scheme``'s module as the task builds it, if ``cfg.eval.recalibrate`` lists the scheme."""
    from pelab.positional.registry import build_positional_encoding

    if scheme not in cfg.eval.recalibrate:
        return []
    pe = build_positional_encoding(scheme, d_model=cfg.model.d_model, n_heads=cfg.model.n_heads, causal=causal,
                                   n_layers=cfg.model.n_layers, options=cfg.options(scheme))
    return [m for m in map(method, cfg.eval.recalibrate_methods) if m.applies_to(pe)]


def in_place(model: Any, method: Method, context: int, multiple: int) -> Any:
    """A sequence model (``with_positional``) with ``method``'s module in place, fixed at s = ``multiple`` for a
    trained length of ``context`` tokens; the model itself where the method keeps the trained module."""
    if method.rope_type is None and not method.drop:
        return model
    return model.with_positional(method.module(model.pe, context, multiple))
