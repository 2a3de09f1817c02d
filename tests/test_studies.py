"""A new study is one record: every reader of the studies' lists loops over ``pelab.studies.STUDIES``, so a fourth
record (here with the tests' tiny reverse task as its one task) is written into the pipeline, dealt by `pelab
parallel`, validated with its own schemes and named in the report's header with nothing else edited."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml
from conftest import smoke_raw
from tiny_reverse.task import TINY

from pelab.compose import compose_params
from pelab.params import parse_params
from pelab.studies import STUDIES, StudyRecord, record
from pelab.tasks import TASKS


@pytest.fixture
def fourth_study():
    """The record ``StudyRecord("tiny_reverse", …)``: its keys follow from its name, its task package is the tests'
    top-level ``tiny_reverse``."""
    from tiny_reverse.task import ReverseTask

    study = StudyRecord("tiny_reverse", title="tiny study", about="a fourth study, added by a test")
    TASKS["tiny_reverse"] = ReverseTask
    STUDIES.append(study)
    yield study
    STUDIES.remove(study)
    TASKS.pop("tiny_reverse")


def fourth_raw(**changes) -> dict:
    raw = smoke_raw(**{"tiny_reverse_tasks": ["tiny_reverse"], "tiny_reverse_schemes": ["none", "rope"], **changes})
    raw["tiny_reverse"] = TINY
    return raw


def test_a_record_derives_its_keys_from_its_name_and_the_main_study_keeps_its_own():
    length = record("length")
    assert (length.tasks_key, length.schemes_key, length.select, length.tune_key, length.package, length.suffix) == (
        "length_tasks", "length_schemes", "length_schemes", "tune.length_tasks", "length", "_length")
    main = record("main")
    assert (main.tasks_key, main.schemes_key, main.select, main.tune_key, main.package, main.suffix) == (
        "tasks", "pe.schemes", "pe", "tune.tasks", None, "")
    with pytest.raises(ValueError, match=r"^unknown study 'nope'; valid choices: main, length, lm$"):
        record("nope")


def test_a_fourth_study_is_validated_with_its_own_schemes(fourth_study):
    assert fourth_study.tasks_key == "tiny_reverse_tasks" and fourth_study.stage("run") == "run_tiny_reverse"
    params = parse_params(fourth_raw(), check_cuda=False)
    assert params.schemes_of("tiny_reverse") == ("none", "rope")
    assert params.schemes_of("copy") == params.schemes and params.tasks[-1] == "tiny_reverse"
    assert params.home_of("tiny_reverse") == "tiny_reverse" and params.tasks_of("tiny_reverse") == ("tiny_reverse",)
    with pytest.raises(ValueError, match=r"^task 'tiny_reverse' is in tasks but belongs to the tiny_reverse study; "
                                         r"list it in tiny_reverse_tasks$"):
        parse_params({**fourth_raw(tiny_reverse_tasks=[]), "tasks": ["copy", "tiny_reverse"]}, check_cuda=False)
    tuned = parse_params(fourth_raw(tune={"tiny_reverse_tasks": ["tiny_reverse"]}), check_cuda=False)
    assert tuned.tune.tasks == ("tiny_reverse",)


def test_a_fourth_study_s_stages_are_written_into_its_own_pipeline_files(fourth_study):
    from pelab.pipeline.write import pipeline_files

    files = pipeline_files()
    for kind in ("prepare", "run", "tune"):
        stages = yaml.safe_load(files[f"pipelines/tiny_reverse/{kind}/dvc.yaml"])["stages"]
        assert list(stages) == [f"{kind}_tiny_reverse"]
    run = yaml.safe_load(files["pipelines/tiny_reverse/run/dvc.yaml"])["stages"]["run_tiny_reverse"]
    # a foreach over its composed items (conf: `tiny_reverse_runs: ${pelab_runs:tiny_reverse}`), each stage reading its own
    assert run["foreach"] == "${tiny_reverse_runs}" and "tiny_reverse_runs.${key}" in run["do"]["params"]
    assert "tiny_reverse.model" in run["do"]["params"] and "tiny_reverse_schemes" not in run["do"]["params"]
    prepare = yaml.safe_load(files["pipelines/tiny_reverse/prepare/dvc.yaml"])["stages"]["prepare_tiny_reverse"]
    assert prepare["foreach"] == "${tiny_reverse_tasks}" and prepare["do"]["outs"] == ["data/${item}"]
    assert "tiny_reverse_tasks" in yaml.safe_load(files["dvc.yaml"])["stages"]["check"]["params"]


def test_a_fourth_study_is_dealt_into_the_shards_of_pelab_parallel(fourth_study):
    from pelab.parallel import shard_overrides

    composed = {"tasks": ["copy"], "pe": {"schemes": ["none"]}, "tiny_reverse_tasks": ["tiny_reverse"],
                "tiny_reverse_schemes": ["none", "rope"]}
    shards = shard_overrides(composed, 3)
    assert shards == [["pe=[none]", "length_tasks=[]", "lm_tasks=[]", "tiny_reverse_tasks=[]"],
                      ["tasks=[]", "length_tasks=[]", "lm_tasks=[]", "tiny_reverse_schemes=[none]"],
                      ["tasks=[]", "length_tasks=[]", "lm_tasks=[]", "tiny_reverse_schemes=[rope]"]]


def test_a_fourth_study_has_its_clause_in_the_report_s_header(fourth_study):
    import json

    from pelab.report.build import header
    from pelab.report.study import Study

    params = parse_params(fourth_raw(), check_cuda=False)
    study = Study(json.loads(json.dumps(params.to_dict())))
    assert study.schemes_of("tiny_reverse") == ("none", "rope")
    text = "\n".join(header(SimpleNamespace(params=study, seeds=list(study.seeds))))
    assert "; tiny study tasks `tiny_reverse`, schemes `none`, `rope`; seeds" in text
    assert "Profile **smoke**, tasks `copy`, `translation`, schemes" in text


@pytest.mark.parametrize("override, home", [("tasks=[copy,reverse]", "length"), ("tasks=[lm]", "lm"),
                                            ("length_tasks=[reverse,copy]", "main")])
def test_a_task_in_another_study_s_list_stops_composition_in_one_line(repo_root, override, home):
    """Composition (pelab's, and DVC's through hydra_plugins/) resolves conf's `study_lists`: a task listed in a study
    it does not belong to beside its own study's list stops there, naming the list it belongs in."""
    from pelab.compose import compose_params

    task = override.split("=")[1].strip("[]").split(",")[-1]
    with pytest.raises(ValueError) as refused:
        compose_params(repo_root / "conf", [override])
    message = str(refused.value)
    assert "\n" not in message and f"task {task!r} is in " in message, message
    assert message.endswith(f"belongs to the {home} study; list it in {record(home).tasks_key}"), message
    assert compose_params(repo_root / "conf", [])["study_lists"] == "checked"


def test_a_study_list_that_is_not_a_list_stops_composition_and_set_fills_a_null_parent(repo_root):
    with pytest.raises(ValueError, match=r"length_tasks must be a list, e.g. 'length_tasks=\[reverse\]', got 'reverse'$"):
        compose_params(repo_root / "conf", ["length_tasks=reverse"])
    with pytest.raises(ValueError, match=r"task 'copy' is listed twice, in tasks$"):
        compose_params(repo_root / "conf", ["tasks=[copy,copy]"])
    raw = {"tune": None, "pe": {"selected": {"rope": "rope"}}}
    StudyRecord.set(raw, "tune.length_tasks", ["reverse"])
    StudyRecord.set(raw, "pe.schemes", ["rope"])
    assert raw == {"tune": {"length_tasks": ["reverse"]}, "pe": {"selected": {"rope": "rope"}, "schemes": ["rope"]}}


def test_a_length_task_runs_with_a_list_of_its_own_and_the_report_reads_it_back():
    """`length_task_schemes` gives a task its own schemes in place of `length_schemes` (the quick profile's window on
    PoPE's task); every reader (`schemes_of`: runner, aggregate, report) sees it, and the report's `Study` too. An entry
    for a registered task the study does not list now is left out, so `-S 'length_tasks=[reverse]'` keeps working."""
    import json

    from pelab.report.study import Study

    raw = smoke_raw(length_tasks=["reverse", "indirect_causal"], length_schemes=["none", "rope"],
                    length_task_schemes={"indirect_causal": ["rope", "pope"], "count_causal": ["cope"]})
    params = parse_params(raw, check_cuda=False)
    assert params.schemes_of("reverse") == ("none", "rope")
    assert params.schemes_of("indirect_causal") == ("rope", "pope")
    assert params.studies["length"].task_schemes == (("indirect_causal", ("rope", "pope")),)
    assert params.with_study_schemes("length") == ("reverse",)
    assert tuple(params.task("indirect_causal").positional) == ("rope", "pope")  # its schemes' options only
    study = Study(json.loads(json.dumps(params.to_dict())))
    assert study.schemes_of("indirect_causal") == ("rope", "pope") and study.with_study_schemes("length") == ("reverse",)
    assert parse_params(smoke_raw(length_tasks=["reverse"], length_schemes=["none"]),
                        check_cuda=False).studies["length"].task_schemes == ()  # absent: no task has its own list


def test_a_main_task_s_own_list_filters_pe_and_its_run_stages_are_exactly_those_pairs(repo_root):
    """`main_task_schemes` narrows a task of the main study (a stage per (task, scheme)) to the schemes of `pe` it names:
    a filter, so `-S pe=…` still selects, and composition gives the run stages' foreach exactly the pairs that run,
    named as the matrix named them."""
    runs = compose_params(repo_root / "conf", ["profile=smoke", "pe=[none,sinusoidal,alibi]",
                                               "+main_task_schemes.translation=[alibi,none,fire]"])["main_runs"]
    assert list(runs) == ["copy-none", "copy-sinusoidal", "copy-alibi", "translation-none", "translation-alibi"]
    assert runs["translation-alibi"] == {"task": "translation", "scheme": "alibi"}
    runs = compose_params(repo_root / "conf", ["profile=smoke", "pe=[rope]", "tasks=[translation]",
                                               "+main_task_schemes.translation=[alibi]"])["main_runs"]
    assert runs == {}  # nothing of translation's window selected: no stage
    raw = smoke_raw(tasks=["copy", "translation"], main_task_schemes={"translation": ["alibi", "none"]})
    StudyRecord.set(raw, "pe.schemes", ["none", "sinusoidal", "alibi"])
    params = parse_params(raw, check_cuda=False)
    assert params.schemes_of("copy") == ("none", "sinusoidal", "alibi")
    assert params.schemes_of("translation") == ("none", "alibi")  # in the order of pe.schemes
    assert params.with_study_schemes("main") == ("copy",)
    StudyRecord.set(raw, "tune.tasks", ["translation"])
    with pytest.raises(ValueError, match=r"^tune.tasks lists 'translation', which main_task_schemes gives a list of its "
                                         r"own; tuning runs a task with every scheme of pe.schemes: remove one of them$"):
        parse_params(raw, check_cuda=False)


@pytest.mark.parametrize("change, words", [
    ({"length_task_schemes": ["rope"]}, "length_task_schemes must map a task to its schemes, e.g. "),
    ({"length_task_schemes": {"reversed": ["rope"]}}, "unknown task 'reversed'; valid choices: addition, count, "),
    ({"length_task_schemes": {"reverse": ["rotary"]}}, "unknown positional scheme 'rotary'; valid choices: none, "),
    ({"length_task_schemes": {"reverse": []}}, "length_task_schemes.reverse is empty; list at least one scheme"),
    ({"length_task_schemes": {"reverse": "rope"}}, "length_task_schemes.reverse must be a list, e.g. "),
    ({"length_task_schemes": {"copy": ["rope"]}}, "task 'copy' is in length_tasks but belongs to the main study"),
    ({"lm_task_schemes": {"lm": ["rope"]}}, "lm_task_schemes is not read: the lm study runs every task with every "
                                            "scheme of lm_schemes; set that list instead"),
])
def test_a_bad_list_of_a_task_s_own_is_one_line_naming_it(change, words):
    raw = smoke_raw(length_tasks=["reverse"], length_schemes=["none"], lm_tasks=["lm"], lm_schemes=["none"], **change)
    with pytest.raises(ValueError) as error:
        parse_params(raw, check_cuda=False)
    assert str(error.value).startswith(words) and "\n" not in str(error.value), str(error.value)
