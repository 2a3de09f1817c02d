"""params.yaml is the committed Hydra composition of conf/, and conf/ matches the registry."""

from __future__ import annotations

import yaml

from pelab.compose import compose_params
from pelab.params import load_params
from pelab.positional import scheme_names
from pelab.tasks.copy.config import CopyDataConfig


def test_params_yaml_is_a_composition_of_conf(repo_root):
    """params.yaml is the composition of conf/ for the profile and schemes it records (after
    `dvc exp run -S profile=quick` it holds the quick composition, which is fine)."""
    committed = yaml.safe_load((repo_root / "params.yaml").read_text())
    overrides = [f"profile={committed['profile']}", f"pe.schemes=[{','.join(committed['pe']['schemes'])}]",
                 f"tasks=[{','.join(committed['tasks'])}]", f"seeds=[{','.join(map(str, committed['seeds']))}]",
                 f"length_tasks=[{','.join(committed.get('length_tasks') or [])}]",
                 f"length_schemes=[{','.join(committed.get('length_schemes') or [])}]"]
    composed = compose_params(repo_root / "conf", overrides)
    for params in (committed, composed):  # how the schemes were selected (pe=a vs pe.schemes=[a]) does not matter
        params["pe"].pop("selected")
    assert committed == composed, "params.yaml drifted from conf/: run `pelab compose --out params.yaml`"


# the length study's models only: randomized positions (models that draw positions), xpos (causal models)
LENGTH_ONLY = ["rand_sinusoidal", "rand_learned", "rand_rope", "xpos"]


def main_schemes() -> list[str]:
    return [s for s in scheme_names() if s not in LENGTH_ONLY]


def test_pe_all_lists_every_scheme_every_task_can_use_in_registry_order(repo_root):
    all_cfg = yaml.safe_load((repo_root / "conf/pe/all.yaml").read_text())
    assert list(all_cfg["selected"]) == main_schemes()
    assert compose_params(repo_root / "conf", ["pe=all"])["pe"]["schemes"] == main_schemes()
    full = compose_params(repo_root / "conf", ["profile=full"])
    # the full length study runs every scheme that its encoder and decoder tasks can both use
    assert full["length_schemes"] == [s for s in scheme_names() if s != "xpos"]


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
    for profile in ("full", "quick", "smoke"):
        composed = compose_params(repo_root / "conf", [f"profile={profile}"])
        assert composed["profile"] == profile
        path = tmp_path / f"{profile}.yaml"
        path.write_text(yaml.safe_dump(composed))
        params = load_params(path)
        assert params.seeds == (0, 1, 2, 3, 4)
        assert isinstance(params.task("copy").data, CopyDataConfig)
        assert params.tasks[:2] == ("copy", "translation")
        assert set(params.tasks[2:]) == set(composed["length_tasks"]) and composed["length_tasks"]
        for task in composed["length_tasks"]:  # every length task reads the one shared block
            assert composed[task] == {k: composed["length"][k] for k in ("data", "model", "train", "eval",
                                                                          "positional")}


def test_each_task_reads_each_scheme_options_through_its_own_section(repo_root):
    """`<task>.positional.<scheme>` follows the global `positional.<scheme>` unless the task overrides it."""
    base = compose_params(repo_root / "conf", ["profile=smoke"])
    changed = compose_params(repo_root / "conf", ["profile=smoke", "positional.rope.base=500"])
    assert changed["copy"]["positional"]["rope"] == changed["translation"]["positional"]["rope"] == {"base": 500.0}
    for task in ("copy", "translation"):
        for scheme in main_schemes():
            if scheme != "rope":
                assert changed[task]["positional"][scheme] == base[task]["positional"][scheme]
    # the copy task sizes T5's buckets to its lengths; translation keeps T5's own
    assert base["copy"]["positional"]["t5"] == {"num_buckets": 48, "max_distance": 40}
    assert base["translation"]["positional"]["t5"] == base["positional"]["t5"] == {"num_buckets": 32,
                                                                                    "max_distance": 128}


def test_conf_positional_lists_every_scheme_with_exactly_its_declared_options(repo_root):
    from pelab.positional import option_names

    composed = compose_params(repo_root / "conf")
    assert list(composed["positional"]) == scheme_names()
    for name, options in composed["positional"].items():
        assert sorted(options) == option_names(name), name
    for task in composed["tasks"]:
        assert list(composed[task]["positional"]) == main_schemes(), task
    assert list(composed["length"]["positional"]) == scheme_names()
    for name, options in composed["length"]["positional"].items():
        assert sorted(options) == option_names(name), name
