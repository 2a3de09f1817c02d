"""params.yaml is the committed Hydra composition of conf/, and conf/ matches the registry."""

from __future__ import annotations

import yaml

from pelab.compose import compose_params
from pelab.params import load_params
from pelab.positional import scheme_names
from pelab.studies import STUDIES
from pelab.tasks.copy.config import CopyDataConfig


def test_params_yaml_is_a_composition_of_conf(repo_root):
    """params.yaml is the composition of conf/ for the profile and schemes it records (after
    `dvc exp run -S profile=quick` it holds the quick composition, which is fine)."""
    committed = yaml.safe_load((repo_root / "params.yaml").read_text())
    overrides = [f"profile={committed['profile']}", f"pe.schemes=[{','.join(committed['pe']['schemes'])}]",
                 f"tasks=[{','.join(committed['tasks'])}]", f"seeds=[{','.join(map(str, committed['seeds']))}]",
                 f"length_tasks=[{','.join(committed.get('length_tasks') or [])}]",
                 f"length_schemes=[{','.join(committed.get('length_schemes') or [])}]",
                 f"lm_tasks=[{','.join(committed.get('lm_tasks') or [])}]",
                 f"lm_schemes=[{','.join(committed.get('lm_schemes') or [])}]"]
    composed = compose_params(repo_root / "conf", overrides)
    for params in (committed, composed):  # how the schemes were selected (pe=a vs pe.schemes=[a]) does not matter
        params["pe"].pop("selected")
    assert committed == composed, "params.yaml drifted from conf/: run `pelab compose --out params.yaml`"


# the length study's models only: randomized positions (models that draw positions), xpos (causal models); and
# RoPE's specs (its θ axis, HoPE, RoPE with each switch against dilution), which the length and LM studies run
# (positional/schemes.yaml; every task's models take them: `pe=[rope,rope_ssmax]`)
LENGTH_ONLY = ["rand_sinusoidal", "rand_learned", "rand_rope", "xpos", "rope_theta10", "rope_theta100", "rope_theta1k",
               "rope_theta1m", "hope", "fope", "rope_ssmax", "rope_sink", "rope_gate", "mamba"]


def main_schemes() -> list[str]:
    return [s for s in scheme_names() if s not in LENGTH_ONLY]


def test_pe_all_lists_every_scheme_every_task_can_use_in_registry_order(repo_root):
    all_cfg = yaml.safe_load((repo_root / "conf/pe/all.yaml").read_text())
    assert list(all_cfg["selected"]) == main_schemes()
    assert compose_params(repo_root / "conf", ["pe=all"])["pe"]["schemes"] == main_schemes()
    full = compose_params(repo_root / "conf", ["profile=full"])
    # the full length study runs every scheme that its encoder and decoder tasks can both use, the LM study every
    # scheme that runs causally (all but the two bidirectional forms of ALiBi, which equal `alibi` there)
    # in the LM only: the suite's time, and Mamba, the attention-free reference, is causal only
    switched = ("hope", "fope", "rope_ssmax", "rope_sink", "rope_gate", "mamba")
    assert full["length_schemes"] == [s for s in scheme_names() if s != "xpos" and s not in switched]
    # and QK-norm as a switch on NoPE and RoPE (its claims: src/pelab/report/claims.yaml)
    assert full["lm_schemes"] == [s for s in scheme_names() if s not in ("alibi_sym", "alibi_offset")] + [
        "none+qk_norm", "rope+qk_norm"]


def test_every_scheme_has_its_config_group_file(repo_root):
    for name in main_schemes():
        cfg = yaml.safe_load((repo_root / "conf/pe" / f"{name}.yaml").read_text())
        assert cfg["selected"] == {name: name}
        assert compose_params(repo_root / "conf", [f"pe={name}"])["pe"]["schemes"] == [name]


def test_pe_options_merge_into_a_subset_in_the_order_given(repo_root):
    """`-S 'pe=[rope,alibi]'` studies both (Hydra merges the two options' `selected` maps)."""
    assert compose_params(repo_root / "conf", ["pe=[rope,alibi]"])["pe"]["schemes"] == ["rope", "alibi"]
    assert compose_params(repo_root / "conf", ["pe=[t5,none,t5]"])["pe"]["schemes"] == ["t5", "none"]


def test_every_profile_composes_into_valid_typed_configs(repo_root, tmp_path):
    for profile in ("full", "quick", "medium", "smoke", "full_shape"):
        composed = compose_params(repo_root / "conf", [f"profile={profile}"])
        assert composed["profile"] == profile
        path = tmp_path / f"{profile}.yaml"
        path.write_text(yaml.safe_dump(composed))
        params = load_params(path)
        assert params.seeds == (0, 1, 2, 3, 4)
        assert isinstance(params.task("copy").data, CopyDataConfig)
        assert params.tasks[:2] == ("copy", "translation")
        assert params.tasks[2:] == (*composed["length_tasks"], *composed["lm_tasks"]) and composed["length_tasks"]
        assert params.tasks_of("lm") == ("lm",) and params.main_tasks == ("copy", "translation")
        assert params.studies["length"].schemes == tuple(composed["length_schemes"])
        for task in composed["length_tasks"]:  # every length task reads the one shared block
            assert task not in composed and params.task(task).model == params.task(params.tasks_of("length")[0]).model


def test_each_task_reads_each_scheme_options_through_its_own_section(repo_root):
    """A scheme's options: its Options defaults, then `positional.<scheme>` (every task), then
    `<section>.positional.<scheme>` (that task's, or the length study's, overrides)."""
    from pelab.params import parse_params

    base = parse_params(compose_params(repo_root / "conf", ["profile=smoke"]), check_cuda=False)
    changed = parse_params(compose_params(repo_root / "conf", ["profile=smoke", "+positional.rope.base=500",
                                                               "+positional.t5.num_buckets=64"]), check_cuda=False)
    for task in base.tasks:
        assert changed.task(task).options("rope").base == 500.0
        for scheme in base.schemes_of(task):
            if scheme not in ("rope", "t5"):
                assert changed.task(task).options(scheme) == base.task(task).options(scheme)
    # the copy task sizes T5's buckets to its lengths, over any global setting; translation keeps T5's own
    assert (base.task("copy").options("t5").num_buckets, base.task("copy").options("t5").max_distance) == (48, 40)
    assert changed.task("copy").options("t5").num_buckets == 48
    assert (base.task("translation").options("t5").num_buckets, changed.task("translation").options("t5").num_buckets,
            changed.task("translation").options("t5").max_distance) == (32, 64, 128)
    # the length study's overrides: FIRE's threshold, a learned row for every evaluated position
    assert base.task("reverse").options("fire").threshold == 16.0 and base.task("reverse").options("fire").init_c == 0.1


def test_params_hold_no_copies(repo_root):
    """No value is written twice and no placeholder is written at all: a scheme's defaults live in its spec and
    Options (params list only what differs, and a scheme with nothing to say has no entry), every length task reads
    the one `length` block, and the full profile's params.yaml stays short."""
    from dataclasses import asdict

    from pelab.positional import scheme_options

    composed = compose_params(repo_root / "conf")
    blocks = {"positional": composed["positional"], "length.positional": composed["length"]["positional"],
              **{f"{task}.positional": composed[task].get("positional") or {} for task in composed["tasks"]},
              "lm.positional": composed["lm"]["positional"]}
    assert composed["positional"] == {} and list(blocks["length.positional"]) == ["learned", "fire"]
    assert list(blocks["copy.positional"]) == ["t5"] and blocks["translation.positional"] == {}
    for where, block in blocks.items():
        for scheme, options in block.items():
            assert options, f"{where}.{scheme} is a placeholder"
            defaults = asdict(scheme_options(scheme))
            assert all(options[k] != defaults[k] for k in options), f"{where}.{scheme} repeats a default"
    assert not set(composed["length_tasks"]) & set(composed), "a length task has a section of its own"
    text = (repo_root / "params.yaml").read_text()
    assert text.count(": {}") < 20, "placeholders in params.yaml"
    # the composed items a study's stages loop over (StudyRecord.runs_key, tuned_runs_key): task, scheme and the
    # options params set, each stage depending on its own; the rest stays short
    keys = [k for s in STUDIES for k in (s.runs_key, s.tuned_runs_key) if k]
    pairs = [composed[s.runs_key] for s in STUDIES if s.runs_key]
    assert pairs[0]["translation-rope"] == {"task": "translation", "scheme": "rope"}
    assert pairs[0]["copy-t5"] == {"task": "copy", "scheme": "t5",
                                   "options": {"num_buckets": 48, "max_distance": 40}}
    assert pairs[1]["lm-hope"]["options"] == {"max_period": composed["lm"]["data"]["context"]}
    assert list(pairs[0]) == [f"{t}-{s}" for t in composed["tasks"] for s in main_schemes()]
    derived = len(yaml.safe_dump({k: composed[k] for k in keys}).splitlines())
    assert len(text.splitlines()) - derived <= 400


def test_pelab_schemes_lists_each_schemes_options_with_their_defaults():
    """params.yaml holds only what differs from a scheme's defaults, so `pelab schemes` is where they are read."""
    from click.testing import CliRunner

    from pelab.cli import main

    output = CliRunner().invoke(main, ["schemes"]).output.splitlines()
    switches = next(i for i, line in enumerate(output) if line.startswith("switches ("))  # then the switches
    lines = {line.split()[0]: line for line in output[:switches] if not line.startswith(" ")}  # indented: sources
    assert list(lines) == scheme_names()
    assert lines["t5"].endswith("options: num_buckets=32, max_distance=128")
    assert lines["alibi"].endswith("options: -")
    assert "period=4, layer={'scheme': 'rope', 'span': 'sliding', 'window': 16}, nth_layer={'scheme': 'none'}" in \
        lines["command_a"]
    assert sum("source: Command A (Cohere 2025) after Yang et al. 2025, arXiv 2501.18795" in line for line in output) == 1


def test_the_report_reads_the_study_as_the_params_hold_it(repo_root, tmp_path):
    """reports/study.json (``Params.to_dict``, written by aggregate) read back by the report (``Study``) gives every
    list, every task's sections and every scheme's options as the validated params hold them, at the full profile
    (every task and scheme) and through JSON."""
    import json
    from dataclasses import asdict

    from pelab.params import parse_params
    from pelab.report.study import Study

    params = parse_params(compose_params(repo_root / "conf", []), check_cuda=False)
    study = Study(json.loads(json.dumps(params.to_dict())))
    for name in ("profile", "schemes", "tasks", "seeds", "reference", "studies", "main_tasks"):
        assert getattr(study, name) == getattr(params, name), name
    assert len(params.tasks) >= 9 and study.schemes_of("lm") == params.schemes_of("lm")
    assert (tuple(study.tune.tasks), tuple(study.tune.scales), study.tune.seed) == (
        params.tune.tasks, params.tune.scales, params.tune.seed) and study.tune.tasks
    for task in params.tasks:
        cfg, view = params.task(task), study.task(task)
        assert view.data.__dict__.keys() == asdict(cfg.data).keys()
        assert view.model.d_model == cfg.model.d_model and view.train.steps == cfg.train.steps
        for scheme in cfg.positional:
            assert asdict(view.options(scheme)) == {k: list(v) if isinstance(v, tuple) else v
                                                    for k, v in asdict(cfg.options(scheme)).items()}, (task, scheme)
    assert study.task("translation").eval.decode.beam_size == params.task("translation").eval.decode.beam_size


def test_every_entry_of_a_sections_positional_is_checked_whether_its_study_runs_the_scheme_or_not(repo_root):
    """The length study's stages read the whole `length.positional` section, so an entry for a scheme outside
    `length_schemes` would re-run them: the check stage refuses a bad one there too."""
    import pytest

    from pelab.params import parse_params

    bad_option = r"unknown option\(s\) \['buckets'\] in length.positional.t5"
    for scheme, options, words in (("rotary", {}, "unknown positional scheme 'rotary'; valid choices: none, "),
                                   ("t5", {"buckets": 3}, bad_option)):
        raw = compose_params(repo_root / "conf", ["profile=smoke"])
        assert scheme not in raw["length_schemes"]
        raw["length"]["positional"][scheme] = options
        with pytest.raises(ValueError, match=words):
            parse_params(raw, check_cuda=False)
