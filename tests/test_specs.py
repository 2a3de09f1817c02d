"""A scheme is a spec (positional/schemes.yaml, positional/registry.py): a base class plus option defaults, switches and
randomized positions as data, and adding one (a module and its line, or an entry alone), a task or a length problem
changes no kept run's fingerprint and no existing stage's definition. HoPE, one entry, against its rule."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from pelab.positional import SCHEMES, build_positional_encoding, scheme_options, scheme_spec
from pelab.positional.registry import load_schemes
from pelab.positional.rope import RotaryPositionalEncoding

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("head_dim", "length", "kept"), [(16, 64, 3), (16, 256, 4), (32, 64, 5), (32, 256, 7)])
def test_hope_rotates_exactly_the_pairs_that_turn_within_the_training_length(head_dim, length, kept):
    """HoPE (Chen et al. 2024, arXiv 2410.21216; the rule as DaRoPE's Eq. 2 restates it): pair i rotates iff
    θ_i = 10⁴^(−2i/d) ≥ 2π/L; K = ⌊(d/2)·ln(L/2π)/ln θ⌋ + 1 pairs for these sizes (the helper's table), the rest pass
    unrotated, and every rotated pair keeps RoPE's frequency."""
    pe = build_positional_encoding("hope", d_model=2 * head_dim, n_heads=2, causal=True,
                                   options={"max_period": float(length)})
    rope = build_positional_encoding("rope", d_model=2 * head_dim, n_heads=2, causal=True)
    ours, theirs = pe.rotation_frequencies(), rope.rotation_frequencies()
    assert int((ours > 0).sum()) == kept == math.floor(head_dim / 2 * math.log(length / (2 * math.pi)) / math.log(1e4)) + 1
    assert_close(ours[:kept], theirs[:kept]) and bool((ours[kept:] == 0).all())
    assert bool((2 * math.pi / theirs[:kept] <= length).all()) and bool((2 * math.pi / theirs[kept:] > length).all())
    q, k = torch.randn(1, 2, 5, head_dim), torch.randn(1, 2, 5, head_dim)
    positions = torch.arange(40, 45)
    q_rot, _ = pe.rotate(q, k, positions, positions)
    assert_close(q_rot[..., 2 * kept:], q[..., 2 * kept:], rtol=0, atol=0)  # the slow pairs: position-independent
    assert pe.variants == "" and "HoPE" in scheme_spec("hope").about  # HF's extensions rescale the full spectrum


def test_hope_is_one_entry_of_rope_and_the_lm_sets_its_length_to_its_context(repo_root):
    from pelab.compose import compose_params

    spec = scheme_spec("hope")
    assert spec.cls is RotaryPositionalEncoding and spec.defaults == {"max_period": 64.0}
    for profile in ("full", "quick", "smoke"):
        composed = compose_params(repo_root / "conf", [f"profile={profile}"])
        assert composed["lm"]["positional"]["hope"] == {"max_period": composed["lm"]["data"]["context"]}
    with pytest.raises(ValueError, match="max_period must be 0 .off. or >= 2π"):
        scheme_options("hope", {"max_period": 3.0})


def test_a_spec_is_its_base_with_its_defaults_bit_for_bit():
    """Each spec builds its base's class with the spec's defaults over the class's; params override them."""
    for name, spec in SCHEMES.items():
        if not spec.defaults or spec.randomized or spec.cls.depth_specific:
            continue
        pe = build_positional_encoding(name, d_model=32, n_heads=2, causal=True)
        base = next(n for n, s in SCHEMES.items() if s.cls is spec.cls and not s.defaults and not s.switches)
        plain = build_positional_encoding(base, d_model=32, n_heads=2, causal=True, options=spec.defaults)
        q, k, positions = torch.randn(1, 2, 7, 16), torch.randn(1, 2, 7, 16), torch.arange(3, 10)
        for ours, theirs in zip(pe.rotate(q, k, positions, positions), plain.rotate(q, k, positions, positions)):
            assert_close(ours, theirs, rtol=0, atol=0)
        assert type(pe) is type(plain) and pe.name == name and plain.name == base
    assert scheme_options("rope_theta10", {"base": 7.0}).base == 7.0
    assert scheme_options("rand_learned").max_positions == 512 and scheme_options("rand_learned").max_position == 512
    # a layout's layer types merge key by key over the preset's
    assert scheme_options("gemma3", {"layer": {"window": 8}}).layer == {"scheme": "rope", "base": 1e4,
                                                                         "span": "sliding", "window": 8}


def test_no_scheme_module_is_a_one_line_variant():
    """A variant is an entry, not a module: every module of pelab/positional is a scheme's code or shared code."""
    short = [p.name for p in (ROOT / "src/pelab/positional").glob("*.py")
             if len(p.read_text().splitlines()) < 15 and p.name != "__init__.py"]
    assert short in ([], ["none.py"]), short
    from pelab.scheme_file import entries

    for name, spec in SCHEMES.items():  # a base scheme lives in the module named like it
        if isinstance(entries()[name], str):
            assert spec.module == f"pelab.positional.{name}", name


@pytest.mark.parametrize(("entry", "message"), [
    ("wobble: NoSuchClass", "no module pelab.positional.wobble for 'wobble.NoSuchClass'"),
    ("rope_x: {of: rope.NoSuchClass}", "'rope.NoSuchClass' is not a positional scheme class"),
    ("wobble: {base: 3}", "must be a class name or a mapping with 'of'"),
    ("wobble: {of: sandwich_deluxe}", "of='sandwich_deluxe' is not a base scheme"),
    ("wobble: {of: rope, switches: [softcap]}", "unknown switch"),
])
def test_a_bad_entry_is_one_line_naming_it(tmp_path, entry, message):
    path = tmp_path / "schemes.yaml"
    path.write_text(f"rope: RotaryPositionalEncoding\n{entry}\n")
    with pytest.raises(ValueError, match=message):
        load_schemes(path)


FINGERPRINTS = """
import hashlib, json, sys, tempfile
from pelab.compose import compose_params
from pelab.pipeline.write import pipeline_files
from pelab.runner.kept_runs import fingerprint
from pelab.runner.scheme_records import scheme_record
from pelab.studies import STUDIES
composed = compose_params("conf", [])
data = tempfile.mkdtemp()
pairs = {(t, s) for study in STUDIES for t in study.values(composed, study.tasks_key)
         for s in study.values(composed, study.schemes_key)}
from pelab.tasks import task_names
print(json.dumps({"tasks": task_names(), "runs": {f"{t} {s}": fingerprint(data, t, s) for t, s in sorted(pairs)},
                  "records": {s: scheme_record(s) for s in sorted({s for _, s in pairs})},
                  "pipelines": {rel: hashlib.sha256(text.encode()).hexdigest() for rel, text in pipeline_files().items()}}))
"""

NEW_SCHEME = '''"""``wobble``: a scheme a contributor adds (tests/test_specs.py): a bias of −|i − j| on every head."""

from pelab.positional.base import PositionalEncoding


class WobblePositionalEncoding(PositionalEncoding):
    def bias(self, q_pos, k_pos):
        return -(q_pos[:, None] - k_pos[None, :]).abs().float()[None].expand(self.n_heads, -1, -1)  # (H, Tq, Tk)
'''


NEW_SWITCH = '''"""``softcap``: a switch a contributor adds (tests/test_specs.py): each query's logits scaled down by 1/2."""

import torch

from pelab.model.switches.base import Switch

REFERENCE = "a test's switch, https://example.org/softcap"
SAYS = "each query's logits halved"


class Half(Switch):
    def query_scale(self, seen, k_len):
        return torch.full((1, self.n_heads, 1, 1), 0.5)


SWITCH = Half
'''


def _fingerprints(root: Path) -> dict:
    env = {"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin", "HOME": str(root)}
    out = subprocess.run([sys.executable, "-c", FINGERPRINTS], cwd=root, env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout)


def test_adding_a_scheme_a_spec_a_switch_a_task_or_a_problem_changes_no_kept_run_and_no_stage(tmp_path):
    """The scheme, switch, task and problem recipes (docs/extending.md) followed in a copy: a module and its line, a
    spec entry, a switch module and a spec naming it, a task package, a length problem's module. Every
    finished (task, scheme) of the default study keeps its fingerprint, and every study's pipeline file is as it was:
    no prepare, run or tune stage is stale (tests/test_pipeline_e2e.py asks `dvc status` the same)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "conf", copy / "conf")
    shutil.copytree(ROOT / "stages", copy / "stages")
    shutil.copytree(ROOT / "hydra_plugins", copy / "hydra_plugins")
    before = _fingerprints(copy)
    (copy / "src/pelab/positional/wobble.py").write_text(NEW_SCHEME)
    with (copy / "src/pelab/positional/schemes.yaml").open("a") as f:
        f.write("wobble: WobblePositionalEncoding\nrope_half: {of: rope, partial_rotary_factor: 0.5}\n"
                "rope_softcap: {of: rope, switches: [softcap]}\n")
    # and a switch: a module of pelab/model/switches, which a spec names
    (copy / "src/pelab/model/switches/softcap.py").write_text(NEW_SWITCH)
    # and a task: a package found by its TASKS (copy's, under another name: config, data, model, task, evaluate)
    shutil.copytree(ROOT / "src/pelab/tasks/copy", copy / "src/pelab/tasks/recopy",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for path in (copy / "src/pelab/tasks/recopy").rglob("*.py"):
        text = path.read_text().replace("pelab.tasks.copy", "pelab.tasks.recopy")
        path.write_text(text.replace('name = "copy"', 'name = "recopy"').replace('{"copy": ', '{"recopy": '))
    # and a length problem: a module named like it (reverse's, under another name)
    problems = copy / "src/pelab/tasks/length/data/problems"
    (problems / "mirror.py").write_text((problems / "reverse.py").read_text().replace('name = "reverse"',
                                                                                       'name = "mirror"'))
    after = _fingerprints(copy)
    spec = subprocess.run([sys.executable, "-c", "from pelab.positional import scheme_spec as s; "
                           "print(s('rope_softcap').switches, s('alibi+softcap').switches)"], cwd=copy, text=True,
                          env={"PYTHONPATH": str(copy / "src"), "PATH": "/usr/bin:/bin", "HOME": str(copy)},
                          capture_output=True, check=True, timeout=300).stdout
    assert spec.split() == ["('softcap',)", "('softcap',)"]  # found by its module
    new = {"recopy", "mirror", "mirror_causal"}
    assert [t for t in after["tasks"] if t not in new] == before["tasks"] and new <= set(after["tasks"])
    assert len(before["runs"]) > 400 and after["runs"] == before["runs"]
    assert len(before["records"]) > 30 and after["records"] == before["records"]  # what run stages depend on
    # every study's stages as they were; only the root's (check, aggregate, report: they read every scheme) may list it
    studies = {rel: text for rel, text in before["pipelines"].items() if rel != "dvc.yaml"}
    assert len(studies) == 9 and {rel: after["pipelines"][rel] for rel in studies} == studies


def test_each_problem_states_itself_and_the_report_names_none(tmp_path):
    """A length problem's statement is its module's docstring (``Problem.statement``), which the report prints through
    reports/study.json; no report module or template names a problem, and editing the statement changes no kept
    run's fingerprint (``closure.training_source`` leaves a module's docstring out)."""
    from pelab.closure import training_source
    from pelab.tasks import get_task
    from pelab.tasks.length.data.problems import PROBLEMS

    for name, problem in PROBLEMS.items():
        said = get_task(name).statement()
        assert said == get_task(f"{name}_causal").statement() == {
            "problem": name, "statement": problem.statement, "retrieval": problem.retrieval}
        assert problem.statement.startswith("**") and "http" in problem.statement, name  # a title and its source
    assert [n for n, p in PROBLEMS.items() if p.retrieval] == ["recall"]
    for path in (ROOT / "src/pelab/report").rglob("*"):
        if path.suffix in (".py", ".md"):
            text = path.read_text()
            assert not [n for n in PROBLEMS for q in '"\'`' if f"{q}{n}" in text], path
    recall = ROOT / "src/pelab/tasks/length/data/problems/recall.py"
    text = recall.read_text()
    edited = text.replace("**Associative recall**", "**Associative recall, restated**", 1)
    assert edited != text
    (tmp_path / "recall.py").write_text(edited)
    assert training_source(tmp_path / "recall.py") == training_source(recall)
