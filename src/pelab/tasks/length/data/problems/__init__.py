"""The problems of the length study: a source string -> (question, answer), both token rows; found by convention:
every module of this package but ``base`` defines ``PROBLEM``, an instance of ``base.Problem`` named like the module,
and the registry has its two tasks (``<name>``, bidirectional, and ``<name>_causal``: ``pelab.tasks.length.task``),
as a task of DeepMind's randomized positional encodings is one class
(github.com/google-deepmind/randomized_positional_encodings, ``tasks/``). No file lists every problem, so adding one (a module) edits nothing an existing run is trained from
(``pelab.closure`` follows, from here, the stage's own task's problem only). Order: by module name.

A problem of *length n* has an input of n symbols (binary addition: two n-bit numbers). Vocabulary: the symbols
0..k-1, then ``SEP`` (ends the question), ``BLANK`` (an answer slot of the encoder layout) and ``PLUS`` (binary
addition). Ruoss et al. 2023 (https://arxiv.org/abs/2305.16843), Table 4: reverse string, duplicate string, binary
addition; multi-query associative recall (Arora et al. 2024, Zoology, https://arxiv.org/abs/2312.04927), whose
length is its number of key-value pairs; selective copy, indirect indexing and counting (their modules).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from pelab.tasks.length.data.problems.base import Problem

PACKAGE = Path(__file__).resolve().parent


def problem_modules() -> list[str]:
    """``pelab.tasks.length.data.problems.<name>`` of every problem, in the registry's order."""
    return [f"{__name__}.{p.stem}" for p in sorted(PACKAGE.glob("*.py")) if p.stem not in ("__init__", "base")]


def _found(module: str) -> Problem:
    problem = importlib.import_module(module).PROBLEM
    if problem.name != module.rsplit(".", 1)[1]:
        raise ValueError(f"{module}: its PROBLEM is named {problem.name!r}; a problem lives in the module named like it")
    return problem


PROBLEMS: dict[str, Problem] = {problem.name: problem for problem in map(_found, problem_modules())}
