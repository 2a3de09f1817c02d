"""The report's fixed prose lives in ``src/pelab/report/templates`` (Jinja2) and its numbers come from the sections:
a value a template asks for and no section gives fails instead of printing a blank, every template is used, and the
control scheme is found by what it does, not by its name."""

from __future__ import annotations

import re
from pathlib import Path

import jinja2
import pytest

from pelab.positional import SCHEMES, SchemeSpec, is_control, scheme_names
from pelab.report.render import environment, render, sentences

REPORT = Path(__file__).resolve().parents[1] / "src/pelab/report"


def test_a_missing_value_fails_instead_of_printing_nothing():
    with pytest.raises(jinja2.UndefinedError, match="is undefined"):
        render("translation.md", profile="quick")


def test_a_section_ends_with_one_empty_line_however_the_template_ends():
    lines = render("analyses.md", seed=0, n=5)
    assert lines[0] == "## The references' analyses, reproduced" and lines[1] == ""
    assert "seed 0" in lines[2] and "all 5 seeds" in lines[2]
    assert lines[-1] == "" and lines[-2] != ""
    assert sentences("length_choices.md", bases=[], randomized=[], draws=4, tempered=False) == []
    notes = sentences("length_choices.md", bases=["rope"], randomized=["rand_rope"], draws=4, tempered=True)
    assert notes[1].startswith("`rand_rope` are scored at fixed position draws") and "ln T / ln L" in notes[2]


def test_the_filters_format_and_name_schemes():
    template = environment().from_string('{{ x|fmt(".2f") }} {{ x|fmt("g") }} {{ names|ticks }}')
    assert template.render(x=0.5, names=["a", "b"]) == "0.50 0.5 `a`, `b`"


def test_every_template_is_filled_by_some_section():
    code = "\n".join(path.read_text() for path in REPORT.rglob("*.py"))
    templates = sorted(path.name for path in (REPORT / "templates").glob("*.md"))
    assert templates and all(re.search(rf'"{re.escape(name)}"', code) for name in templates), templates


def test_the_control_is_found_by_its_hooks_not_its_name():
    assert [name for name in scheme_names() if is_control(name)] == ["none"]

    class Control(SCHEMES["none"].cls):  # a renamed control: still no hook overridden
        pass

    class Moving(SCHEMES["none"].cls):
        def embed(self, x, positions):
            return x + positions[..., None]

    SCHEMES.update(control2=SchemeSpec("control2", Control), moving=SchemeSpec("moving", Moving),
                   switched=SchemeSpec("switched", Control, switches=("sink",)))
    try:  # a switch tells a causal query its position (SSMax's log n), so a switched null is no control
        assert is_control("control2") and not is_control("moving") and not is_control("switched")
    finally:
        del SCHEMES["control2"], SCHEMES["moving"], SCHEMES["switched"]


def _figure():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(2.5, 2))
    ax.plot([0, 1, 2], [2, 0, 1], label="a line")
    ax.set_title("a title")
    ax.legend()
    return fig


def test_a_figure_rendered_in_the_background_is_the_figure_rendered_here(tmp_path):
    from pelab.report import style

    style.setup()
    style.save(_figure(), tmp_path / "here.png")
    with style.rendering_in_background(1):
        style.save(_figure(), tmp_path / "there.png")
        style.save(_figure(), tmp_path / "cropped_not.png", tight=False)
    assert (tmp_path / "there.png").read_bytes() == (tmp_path / "here.png").read_bytes()
    assert (tmp_path / "cropped_not.png").read_bytes() != (tmp_path / "here.png").read_bytes()
    assert style._renderer is None  # closed: the next save renders here again


def test_a_figure_that_fails_in_the_background_raises_when_the_block_ends(tmp_path):
    from pelab.report import style

    (tmp_path / "taken.png").mkdir()  # a directory where the figure should go
    with pytest.raises(IsADirectoryError), style.rendering_in_background(1):
        style.save(_figure(), tmp_path / "taken.png")
    assert style._renderer is None


def test_a_scheme_with_switches_has_a_colour_of_its_own_fixed_by_its_name():
    """`none+qk_norm` is no registered entry: the figures still draw it, in a colour of its own, the same each time."""
    from pelab.report.style import scheme_palette

    palette = scheme_palette()
    colour = palette["none+qk_norm"]
    assert len(colour) == 3 and colour == scheme_palette()["none+qk_norm"]
    assert colour != palette["none"] and "rope" in palette
    from pelab.report.style import palette_with_variants

    shown = palette_with_variants(["none", "none+qk_norm", "rope+PI", "rope+qk_norm", "rope+qk_norm+PI"])
    assert shown["none+qk_norm"] == colour != shown["none"] and shown["rope+PI"] == palette["rope"]
    assert shown["rope+qk_norm+PI"] == shown["rope+qk_norm"] != palette["rope"]
