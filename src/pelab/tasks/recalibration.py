"""The recalibration settings every study that fine-tunes its runs at a longer length shares (the LM's ``lm.eval``,
the length study's ``length.eval``): declarations only, read wherever params load. The methods themselves, and the
fine-tune's budget: ``pelab.positional.recalibration`` (what only the fine-tunes execute, so that editing them never
retrains a run).
"""

from __future__ import annotations

from dataclasses import dataclass

# the names of ``pelab.positional.recalibration.METHODS``, in its order (tests/test_recalibrate.py checks they agree)
METHOD_NAMES = ("long", "pi", "ntk", "yarn", "pose", "pose_tokens", "drope")


@dataclass(frozen=True)
class RecalibrationSettings:
    """A study's recalibration settings, in its task's ``eval`` section (the LM's ``lm.eval``, the length study's
    ``length.eval``): each run of a scheme listed in ``recalibrate`` fine-tuned at ``recalibrate_multiple`` times its
    trained length with each of ``recalibrate_methods`` that applies to it (RoPE's extensions where the scheme has
    them; ``long``, the control, everywhere) for a share ``recalibrate_share`` of its training steps at
    ``recalibrate_lr`` times its learning rate, then scored on the whole grid with the method in place. A subclass's
    ``__post_init__`` calls ``check_recalibration_settings``."""

    recalibrate: tuple[str, ...] = ()
    recalibrate_methods: tuple[str, ...] = METHOD_NAMES
    recalibrate_share: float = 0.1
    recalibrate_lr: float = 0.1
    recalibrate_multiple: int = 2

    def check_recalibration_settings(self, section: str) -> None:
        """One-line errors naming ``<section>.<field>``; the lists as tuples of names."""
        for name in ("recalibrate", "recalibrate_methods"):
            object.__setattr__(self, name, tuple(str(s) for s in getattr(self, name)))
        for name in self.recalibrate_methods:
            if name not in METHOD_NAMES:
                raise ValueError(f"{section}.recalibrate_methods: unknown recalibration method {name!r}; valid "
                                 f"choices: {', '.join(METHOD_NAMES)}")
        if not 0.0 < self.recalibrate_share <= 1.0:
            raise ValueError(f"{section}.recalibrate_share must be in (0, 1], got {self.recalibrate_share}")
        if not self.recalibrate_lr > 0:
            raise ValueError(f"{section}.recalibrate_lr must be > 0, got {self.recalibrate_lr}")
        if int(self.recalibrate_multiple) != self.recalibrate_multiple or self.recalibrate_multiple < 2:
            raise ValueError(f"{section}.recalibrate_multiple must be a whole number >= 2, got "
                             f"{self.recalibrate_multiple}")

    def check_recalibrated_schemes(self, section: str) -> None:
        """Every listed scheme a registered one, or one with switches (``rope+qk_norm``; a listed scheme the study
        does not run is not recalibrated: a profile lists what it may run)."""
        from pelab.positional import check_scheme, scheme_names

        def known(name: str) -> bool:
            try:
                return check_scheme(name) == name
            except ValueError:
                return False

        unknown = [s for s in self.recalibrate if not known(s)]
        if unknown:
            raise ValueError(f"{section}.recalibrate lists unknown scheme(s) {unknown}; valid choices: "
                             f"{', '.join(scheme_names())}")
