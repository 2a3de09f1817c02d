"""params.yaml is the committed Hydra composition of conf/, and conf/ matches the registry."""

from __future__ import annotations

import yaml

from pelab.compose import compose_params
from pelab.config import CopyStudyConfig, load_params
from pelab.positional import scheme_names


def test_params_yaml_is_the_default_composition(repo_root):
    committed = yaml.safe_load((repo_root / "params.yaml").read_text())
    composed = compose_params(repo_root / "conf")
    assert committed == composed, "params.yaml drifted from conf/: run `pelab compose --out params.yaml`"


def test_pe_all_lists_every_registered_scheme_in_registry_order(repo_root):
    all_cfg = yaml.safe_load((repo_root / "conf/pe/all.yaml").read_text())
    assert all_cfg["schemes"] == scheme_names()


def test_every_scheme_has_its_config_group_file(repo_root):
    for name in scheme_names():
        cfg = yaml.safe_load((repo_root / "conf/pe" / f"{name}.yaml").read_text())
        assert cfg == {"schemes": [name]}
        assert compose_params(repo_root / "conf", [f"pe={name}"])["pe"]["schemes"] == [name]


def test_every_profile_composes_into_valid_typed_configs(repo_root, tmp_path):
    for profile in ("full", "quick", "smoke"):
        composed = compose_params(repo_root / "conf", [f"profile={profile}"])
        assert composed["profile"] == profile
        path = tmp_path / f"{profile}.yaml"
        path.write_text(yaml.safe_dump(composed))
        params = load_params(path)
        assert params.seeds == (0, 1, 2, 3, 4)
        assert isinstance(params.copy, CopyStudyConfig)
