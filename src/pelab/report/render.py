"""Fill a section's markdown template (``templates/<name>``, Jinja2) with what the section computed: the fixed
prose lives in the templates, the numbers and the sentences that name schemes are generated in the sections.

Filters: ``fmt(spec)`` is Python's ``format`` (``{{ lr|fmt("g") }}``), ``ticks`` wraps names in backticks and
joins them (``{{ schemes|ticks }}`` -> `` `a`, `b` ``). The report keeps a template's lines as they are written (a
paragraph is mostly one line); block tags stand on lines of their own, or end with ``+%}`` where a line goes on.
A value a template names and the section does not give is an error (``StrictUndefined``), never a blank."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("pelab.report", "templates"), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True, autoescape=False)
    env.filters["fmt"] = format
    env.filters["ticks"] = lambda names, sep=", ": sep.join(f"`{n}`" for n in names)
    return env


def fill(name: str, **values: Any) -> str:
    """The template ``name`` filled with ``values``, without the newlines its last block leaves."""
    return environment().get_template(name).render(**values).rstrip("\n")


def render(name: str, **values: Any) -> list[str]:
    """The filled template as markdown lines, one per template line, ending with the one empty line every section
    ends with."""
    return fill(name, **values).split("\n") + [""]


def sentences(name: str, **values: Any) -> list[str]:
    """The filled template's non-empty lines: one sentence each (a template of notes, some conditional)."""
    return [line for line in fill(name, **values).split("\n") if line]
