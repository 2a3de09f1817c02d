"""The LM study: perplexity against a direct computation, each token scored once per protocol, the passkey
generator and its scoring, the corpus checksum, and the config's one-line errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from conftest import smoke_raw

from pelab.model.config import ModelConfig
from pelab.params import parse_params
from pelab.positional import scheme_options
from pelab.tasks.lm.data.corpus import SOTU_SHA256, corpus_digest, read_sotu
from pelab.tasks.lm.data.passkey import DIGITS, PasskeyFormat, answer_slice, passkey_rows
from pelab.tasks.lm.evaluate import passkey_accuracy, perplexity, windows
from pelab.tasks.lm.key_tokens import KeyTokens
from pelab.tasks.lm.model import build_lm

MODEL = ModelConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)


def model(scheme: str = "alibi"):
    return build_lm(scheme, 30, MODEL, scheme_options(scheme), seed=0).eval()


@pytest.mark.parametrize("n, window, stride", [(64, 64, 64), (64, 16, 16), (64, 16, 8), (64, 32, 4), (48, 16, 16)])
def test_every_target_is_scored_exactly_once_in_both_protocols(n, window, stride):
    """Targets n..2n-1 of a 2n-token text, each once; a sliding window's scored tokens see window - stride before."""
    scored = []
    for start, first in windows(n, n, window, stride):
        assert 0 <= start and start + window <= 2 * n and first == window - stride
        scored += range(start + first, start + window)
    assert sorted(scored) == list(range(n, 2 * n))  # each target once, none left out


@pytest.mark.parametrize("scheme", ["alibi", "sinusoidal", "rope"])
@pytest.mark.parametrize("window, stride", [(16, 16), (16, 8), (32, 8)])
def test_perplexity_equals_the_direct_sum_of_token_nlls(scheme, window, stride):
    """The protocols' mean NLL is the sum, over each target, of −log p(target | the window's tokens before it),
    computed here one window at a time with log_softmax, divided by the number of targets."""
    torch.manual_seed(0)
    docs = [torch.randint(0, 30, (65,)), torch.randint(0, 30, (129,))]  # 2N + 1 tokens, the last N targets scored
    net = model(scheme)
    nll, count, by_position = perplexity(net, docs, window, stride, batch_size=3, device=torch.device("cpu"))
    total, n = 0.0, 0
    for doc in docs:
        half = (len(doc) - 1) // 2
        for start, first in windows(half, half, window, stride):
            with torch.no_grad():
                logits, _ = net(doc[None, start:start + window])
            logp = logits[0].double().log_softmax(-1)
            targets = doc[start + 1:start + window + 1]
            total -= float(logp[torch.arange(window), targets][first:].sum())
            n += window - first
    assert count == n == sum((len(d) - 1) // 2 for d in docs)
    assert nll == pytest.approx(total / n, rel=1e-5)
    assert by_position.shape == (window,) and math.isfinite(float(by_position.sum()))


def test_sliding_with_a_stride_of_the_window_is_the_non_overlapping_protocol():
    docs = [torch.randint(0, 30, (129,), generator=torch.Generator().manual_seed(1))]
    net = model("rope")
    cpu = torch.device("cpu")
    assert perplexity(net, docs, 16, 16, 4, cpu)[0] == perplexity(net, docs, 16, 16, 1, cpu)[0]
    # with a shorter stride every later target sees more context: a different number on an untrained model
    assert perplexity(net, docs, 16, 4, 4, cpu)[0] != perplexity(net, docs, 16, 16, 4, cpu)[0]


class FakeTokenizer:
    """Each word or digit one token; ids from a growing vocabulary; "▁" the word mark."""

    def __init__(self):
        self.vocab = {str(d): d for d in range(10)} | {"▁": 10}

    def token_to_id(self, token):
        return self.vocab.get(token)

    def encode(self, text):
        ids = [self.vocab.setdefault(word, len(self.vocab)) for word in text.split()]
        return type("Encoding", (), {"ids": ids})()


@pytest.mark.parametrize("depth", [0.0, 0.25, 0.5, 1.0])
def test_the_passkey_sits_where_the_depth_says_and_the_answer_ends_the_row(depth):
    fmt = PasskeyFormat.of(FakeTokenizer())
    length, key = 80, [4, 0, 2, 1, 3]
    row = fmt.row(length, depth, key)
    assert row.shape == (length,)
    at = fmt.key_position(length, depth)
    assert row[at:at + DIGITS].tolist() == key  # the key in the key sentence
    assert row[-DIGITS:].tolist() == key  # the answer: the row's last tokens
    n_filler = length - fmt.overhead()
    assert at - len(fmt.key_before) == round(depth * n_filler)  # the filler before the key sentence
    digits_elsewhere = [i for i, t in enumerate(row.tolist()) if t < 10 and not (at <= i < at + DIGITS)]
    assert digits_elsewhere == list(range(length - DIGITS, length))  # no digit anywhere else
    answer = answer_slice(length)  # the logits that predict the answer's tokens
    assert (answer.start + 1, answer.stop + 1) == (length - DIGITS, length)
    with pytest.raises(ValueError, match="at least"):
        fmt.row(fmt.overhead() - 1, depth, key)


class Oracle(torch.nn.Module):
    """Predicts each next token of the rows it was given (found by the prefix before the key's answer), except at
    the positions in ``wrong``; ``chained``: an answer digit is predicted right only after a right digit."""

    def __init__(self, rows, wrong=(), chained=False):
        super().__init__()
        self.rows, self.wrong, self.chained = rows, set(wrong), chained

    def forward(self, tokens):
        prefix = tokens.shape[1] - DIGITS
        which = [next(i for i, row in enumerate(self.rows) if torch.equal(row[:prefix], t[:prefix])) for t in tokens]
        true = self.rows[which]
        nxt = torch.cat([true[:, 1:], true[:, :1]], dim=1)
        for position in self.wrong:
            nxt[:, position] = (nxt[:, position] + 1) % 10
        if self.chained:  # the logits at a written digit predict the next digit right only if it is the true one
            for position in range(prefix, tokens.shape[1] - 1):
                off = tokens[:, position] != true[:, position]
                nxt[off, position] = (true[off, position + 1] + 1) % 10
        return F.one_hot(nxt, 64).float(), []


def test_passkey_is_scored_on_the_key_tokens_only():
    fmt = PasskeyFormat.of(FakeTokenizer())
    length, trials = 60, 4
    rows = passkey_rows(fmt, length, [0.5] * trials, torch.Generator().manual_seed(7))
    score = lambda net: passkey_accuracy(net, fmt, length, 0.5, trials, 7, 2, torch.device("cpu"))  # noqa: E731
    assert score(Oracle(rows)) == (1.0, 1.0, 1.0)
    assert score(Oracle(rows, wrong=range(0, length - DIGITS - 1))) == (1.0, 1.0, 1.0)  # wrong all but the key
    # the last digit wrong: no whole key, 4 of 5 digits both ways
    assert score(Oracle(rows, wrong=[length - 2])) == (0.0, pytest.approx(0.8), pytest.approx(0.8))


def test_passkey_digits_are_what_greedy_decoding_writes_not_the_teacher_forced_share():
    """A model that gets the first digit wrong and each later one right only after a right one: teacher-forced it
    scores 4 of 5 digits, free-running it writes none right."""
    fmt = PasskeyFormat.of(FakeTokenizer())
    length, trials = 60, 4
    rows = passkey_rows(fmt, length, [0.5] * trials, torch.Generator().manual_seed(7))
    net = Oracle(rows, wrong=[length - DIGITS - 1], chained=True)
    exact, greedy, forced = passkey_accuracy(net, fmt, length, 0.5, trials, 7, 3, torch.device("cpu"))
    assert (exact, greedy, forced) == (0.0, 0.0, pytest.approx(0.8))
    right = Oracle(rows, chained=True)
    assert passkey_accuracy(right, fmt, length, 0.5, trials, 7, 3, torch.device("cpu")) == (1.0, 1.0, 1.0)


def test_passkey_beyond_l_counts_only_keys_more_than_l_tokens_back():
    from pelab.tasks.lm.evaluate import key_distance, summaries

    fmt, context = PasskeyFormat.of(FakeTokenizer()), 60
    rows = [{"split": "window", "length": length, "metric": "ppl", "value": 2.0} for length in (60, 120)]
    for length in (60, 120):
        for depth in (0.0, 1.0):
            far = key_distance(fmt, length, depth)
            assert far == length - DIGITS - fmt.key_position(length, depth)
            rows.append({"split": "passkey", "length": length, "depth": depth, "distance": far, "metric": "accuracy",
                         "value": 1.0 if far > context else 0.0})
    assert key_distance(fmt, 120, 1.0) == key_distance(fmt, 60, 1.0) < context < key_distance(fmt, 120, 0.0)
    beyond = [r for r in summaries(rows, context) if r["split"] == "beyond" and r["metric"] == "passkey"]
    assert beyond == [{"split": "beyond", "length": "all", "metric": "passkey", "value": 1.0}]  # depth 1.0 at 2L: out
    # effective length: passkey at L is 0.0 (both keys within L), so no length holds at any threshold above 0
    assert [r["value"] for r in summaries(rows, context, threshold=0.5) if r["split"] == "effective"] == [0.0]
    assert [r["value"] for r in summaries(rows, context, threshold=0.01) if r["split"] == "effective"] == [0.0]
    held = [{**r, "value": 1.0} if r["split"] == "passkey" and r["length"] == 60 else r for r in rows]
    assert [r["value"] for r in summaries(held, context, threshold=0.5) if r["split"] == "effective"] == [120.0]
    assert [r["value"] for r in summaries(held, context, threshold=0.75) if r["split"] == "effective"] == [60.0]


def test_the_corpus_is_checked_by_sha256():
    documents = read_sotu()
    assert len(documents) == 249
    assert corpus_digest({f"{k}.txt": v for k, v in documents.items()}) == SOTU_SHA256
    changed = {f"{k}.txt": v for k, v in documents.items()} | {"1790-Washington-1.txt": "tampered"}
    assert corpus_digest(changed) != SOTU_SHA256


@pytest.mark.parametrize("change, message", [
    ({"data": {"eval_tokens_per_doc": 500}}, "multiple of every evaluation length"),
    ({"eval": {"multiples": [1, 3]}}, "multiple of every evaluation length"),
    ({"eval": {"multiples": [2, 4]}}, "must be increasing and start at 1"),
    ({"data": {"corpus": "wiki"}}, "valid choices: sotu, wikitext-103, or a folder of .txt files"),
    ({"train": {"passkey_share": 1.0}}, "passkey_share"),
    ({"train": {"epochs": 0}}, "lm.train.epochs must be > 0"),
])
def test_bad_lm_settings_fail_in_one_line(change, message):
    from pelab.tasks import get_task

    raw = smoke_raw(tasks=[], lm_tasks=["lm"])
    for section, values in change.items():
        raw["lm"][section] = {**raw["lm"][section], **values}
    with pytest.raises(ValueError, match=message) as error:
        params = parse_params(raw)
        get_task("lm").check_inputs(params.task("lm"))  # the corpus: where it is read (the check stage, prepare)
    assert "\n" not in str(error.value)


def test_a_learned_table_too_short_for_8l_is_refused_before_training():
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["learned"])
    raw["lm"]["positional"]["learned"] = {"max_positions": 100}
    with pytest.raises(ValueError, match="learned position table has 100 rows"):
        parse_params(raw)


# ------------------------------------------------------------------------------------------- the corpus
WORDS = ("the river runs past a quiet town where people walk slowly under old trees and talk about the weather "
         "while children play near the water and birds sing in the morning light").split()


def _write_folder(folder, n_docs: int, words: int) -> None:
    """A corpus with no digit in it: ``n_docs`` documents of ``words`` words each."""
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(n_docs):
        text = " ".join(WORDS[(k * 7 + i * 3) % len(WORDS)] for i in range(words))
        (folder / f"doc_{k:02d}.txt").write_text(text + ".\n", encoding="utf-8")


def _folder_raw(folder, **data):
    raw = smoke_raw(tasks=[], lm_tasks=["lm"], lm_schemes=["alibi"])
    raw["lm"]["data"] = {**raw["lm"]["data"], "corpus": str(folder), "train_documents": None, "test_every": 5, **data}
    return raw


def test_the_lm_prepares_from_a_folder_of_text_without_digits_and_trains_a_passkey_row(tmp_path):
    from pelab.runner.train import train_runs
    from pelab.tasks import get_task
    from pelab import io

    folder = tmp_path / "my_text"
    _write_folder(folder, n_docs=10, words=1500)
    params = parse_params(_folder_raw(folder))
    task, cfg = get_task("lm"), params.task("lm")
    task.prepare(cfg, tmp_path / "data")
    data = task.load_data(tmp_path / "data")
    meta = io.read_json(tmp_path / "data" / "meta.json")
    assert meta["speeches"]["test"] == ["doc_04", "doc_09"] and meta["speeches"]["val"] == ["doc_01", "doc_06"]
    assert meta["corpus"] == {"name": str(folder), "sha256": corpus_digest(
        {p.stem: p.read_text() for p in sorted(folder.glob("*.txt"))})}
    fmt = PasskeyFormat.of(data.tokenizer)  # a token for every digit though the text has none
    assert len(set(fmt.digits)) == 10 and data.tokenizer.decode([fmt.digits[7]]).strip() == "7"
    unk = data.tokenizer.token_to_id("<unk>")
    assert unk not in fmt.filler + fmt.key_before + fmt.key_after + fmt.question  # its words are text, not <unk>
    inputs, targets = task.batches(cfg, data, seed=0)(0)
    n_passkey = round(cfg.train.passkey_share * cfg.train.batch_size)
    assert n_passkey >= 1 and all(int(t) in fmt.digits for t in targets[-1, -DIGITS:])  # the last row: a passkey row
    out = tmp_path / "runs" / "seed_0"
    train_runs(params, "lm", "alibi", [0], tmp_path / "data", [out], device="cpu")
    records = {(r["split"], r["metric"]): r["value"] for r in io.read_jsonl(out / "train_records.jsonl")}
    epochs = cfg.train.steps * (cfg.train.batch_size - n_passkey) * cfg.data.context / len(data.train)
    assert records["train", "epochs"] == pytest.approx(epochs)


@pytest.mark.parametrize("setup, data, message", [
    ("empty", {}, "the folder holds no .txt file"),
    ("missing", {}, "no such corpus or folder"),
    ("few", {}, "give no test document"),
    ("short", {}, "no test document of corpus"),
])
def test_a_bad_corpus_folder_fails_in_one_line_before_training(tmp_path, setup, data, message):
    from pelab.tasks import get_task

    folder = tmp_path / "text"
    if setup == "empty":
        folder.mkdir()
    elif setup == "few":
        _write_folder(folder, n_docs=3, words=400)
    elif setup == "short":
        _write_folder(folder, n_docs=10, words=40)
    with pytest.raises(ValueError, match=message) as error:
        get_task("lm").prepare(parse_params(_folder_raw(folder, **data)).task("lm"), tmp_path / "data")
    assert "\n" not in str(error.value) and not (tmp_path / "data").exists()


def test_the_lm_budget_in_epochs_sets_the_steps_and_a_run_reading_its_text_often_says_so(tmp_path, capsys):
    from pelab.tasks import get_task

    folder = tmp_path / "text"
    _write_folder(folder, n_docs=10, words=1500)
    raw = _folder_raw(folder)
    raw["lm"]["train"] = {**raw["lm"]["train"], "epochs": 2.0}
    params = parse_params(raw)
    task, cfg = get_task("lm"), params.task("lm")
    task.prepare(cfg, tmp_path / "data")
    data = task.load_data(tmp_path / "data")
    budget = task.budget(cfg, data)
    per_step = task.text_tokens_per_step(cfg)
    assert budget.train.steps == math.ceil(2.0 * len(data.train) / per_step) and budget.model == cfg.model
    assert task.train_summary(budget, data)["epochs"] == pytest.approx(2.0, rel=per_step / len(data.train))
    assert "memorise" not in capsys.readouterr().out
    raw["lm"]["train"]["epochs"] = 9.0
    task.budget(parse_params(raw).task("lm"), data)
    line = capsys.readouterr().out.strip()
    assert "\n" not in line and "9.0 times" in line and "may memorise its text" in line


def test_wikitext_103_is_read_as_articles_in_its_own_split():
    """The loader on a local sample in the shape HF datasets gives (one paragraph or heading per line)."""
    import datasets

    from pelab.tasks.lm.data.corpus import read_wikitext

    def lines(title: str, paragraphs: int) -> list[str]:
        return ["", f" = {title} = \n", "", *[f" {title} paragraph {i} , with @-@ tokens . \n" for i in range(paragraphs)],
                " = = Section = = \n", f" {title} section text . \n"]

    sample = {"train": lines("Alpha", 2) + lines("Beta", 1), "validation": lines("Gamma", 1),
              "test": lines("Delta", 3)}
    asked = []

    def load(*args):
        asked.append(args)
        return datasets.DatasetDict({k: datasets.Dataset.from_dict({"text": v}) for k, v in sample.items()})

    documents, split = read_wikitext(load)
    assert asked == [("Salesforce/wikitext", "wikitext-103-raw-v1")]
    assert split == {"train": ["train-0", "train-1"], "val": ["val-0"], "test": ["test-0"]}
    assert documents["train-1"].splitlines() == ["= Beta =", "Beta paragraph 0 , with @-@ tokens .", "= = Section = =",
                                                 "Beta section text ."]
    assert documents["test-0"].count("paragraph") == 3

    def offline(*args):
        raise ConnectionError("Couldn't reach the Hub\nmore lines")

    with pytest.raises(ValueError, match="could not load Salesforce/wikitext .* use lm.data.corpus sotu") as error:
        read_wikitext(offline)
    assert "\n" not in str(error.value)


def test_a_rope_lm_is_scored_with_every_extension_at_its_lengths(monkeypatch):
    """Which lengths each extension of ``rope_extensions.MENU`` is scored at (PI, NTK and dynamic beyond L, where
    the plain rows stand for them at L; yarn and llama3 at L too), with which module: the extension at that length,
    the fixed factor F = 8L / L."""
    from types import SimpleNamespace

    from pelab.positional.rope_extensions import MENU, ExtendedRotary, scaled_inverse_frequencies
    from pelab.tasks.lm import evaluate as lm_evaluate

    calls = []

    def fake_score(net, cfg, data, device, suffix, lengths, longest, key=None):
        calls.append((suffix, tuple(lengths), net.pe))
        return [{"split": split + suffix, "length": t, "metric": "ppl", "value": 2.0} for t in lengths
                for split in ("window", "sliding")]

    monkeypatch.setattr(lm_evaluate, "score", fake_score)
    monkeypatch.setattr(lm_evaluate, "crop", lambda net, cfg, data, device, lengths, key: [  # test_temperature.py
        {"split": protocol + "_crop", "length": t, "metric": "ppl", "value": 3.0} for t in lengths
        for protocol in ("window", "sliding")])
    monkeypatch.setattr(lm_evaluate, "test_key_tokens", lambda cfg, data: KeyTokens([], np.zeros(1)))  # test_key_tokens.py
    monkeypatch.setattr(lm_evaluate, "ablation", lambda net, cfg, data, device: [])
    context, net = 60, model("rope")
    cfg = SimpleNamespace(data=SimpleNamespace(context=context),
                          eval=SimpleNamespace(multiples=(1, 2, 8), effective_threshold=0.9))
    rows = lm_evaluate.evaluate(cfg, net, SimpleNamespace(tokenizer=FakeTokenizer(), meta={}), torch.device("cpu"))
    assert calls[0] == ("", (60, 120, 480), net.pe)
    by_variant = {suffix: [(lengths[0], pe) for s, lengths, pe in calls[1:] if s == suffix]
                  for suffix, _, _ in calls[1:]}
    expected = {"_pi": [120, 480], "_ntk": [120, 480], "_dynamic": [120, 480], "_yarn": [60, 120, 480],
                "_llama3": [60, 120, 480], "_rerope": [60, 120, 480], "_selfextend": [120, 480], "_streaming": [120, 480],
                "_logn": [120, 480]}  # and the temperature, for every scheme
    assert {suffix: [t for t, _ in found] for suffix, found in by_variant.items()} == expected
    assert [pe.temperature for _, pe in by_variant["_logn"]] == pytest.approx([math.log(120) / math.log(60),
                                                                                 math.log(480) / math.log(60)])
    for variant in MENU:
        for length, pe in by_variant[variant.suffix]:
            assert type(pe) is ExtendedRotary
            factor = {"row": length / context, "one": 1.0, "longest": 8.0}[variant.factor_at]
            theta, m = scaled_inverse_frequencies(variant.rope_type, net.pe.head_dim, net.pe.base, factor, context,
                                                  length)
            assert torch.allclose(pe.inverse_frequencies, theta.float()) and pe.attention_factor == m
    # the remappings: w = L/8 for ReRoPE (its reference's, with log-n), L/2 for Self-Extend, whose group keeps each
    # remapped distance below L
    assert [(pe.window, pe.group, pe.log_n) for _, pe in by_variant["_rerope"]] == [(7, None, 60)] * 3
    assert [(pe.window, pe.group) for _, pe in by_variant["_selfextend"]] == [(30, 3), (30, 15)]
    assert [(pe.window, pe.sinks) for _, pe in by_variant["_streaming"]] == [(56, 4)] * 2  # a cache of L
    # the plain rows stand for PI at L; yarn's at L are its own
    assert [r["length"] for r in rows if r["split"] == "window_pi"] == [120, 480]
    assert {r["split"] for r in rows if r["length"] == "all" and r["split"].startswith("at_L")} >= {
        "at_L", "at_L_pi", "at_L_yarn"}


def test_the_crop_line_is_drawn_only_where_it_is_a_control():
    """Issue 53: crop-to-L reads every scored token from exactly L tokens; a non-overlapping window's first tokens, and
    a sliding window's below 2L, read fewer, so there every scheme sits above crop by construction."""
    import pandas as pd

    from pelab.report.lm import where_crop_is_a_control

    rows = pd.DataFrame([{"pe": pe, "split": split, "length": str(t), "metric": "ppl", "value": 1.0}
                         for pe in ("rope", "rope+crop") for split in ("window", "sliding") for t in (64, 128, 256)]
                        + [{"pe": "rope+crop", "split": "at_4L", "length": "all", "metric": "ppl_sliding", "value": 1.0}])
    kept = where_crop_is_a_control(rows, 64, 0.5)  # a sliding window of T scores tokens reading >= T/2
    crop = kept[kept["pe"] == "rope+crop"]
    assert sorted(zip(crop["split"], crop["length"])) == [("at_4L", "all"), ("sliding", "128"), ("sliding", "256")]
    wide = where_crop_is_a_control(rows, 64, 0.75)  # scored tokens read >= T/4: a control only from 4L on
    assert sorted(wide[wide["pe"] == "rope+crop"]["length"]) == ["256", "all"]
    assert len(kept[kept["pe"] == "rope"]) == 6  # every trained scheme's row kept


def test_flat_is_judged_against_the_scheme_s_own_crop_to_l_on_every_seed():
    """Issue 53: a scheme is called flat only where its sliding perplexity at 4L is within the margin of its own at L
    and of its own crop to L (the control for reading no further than L), on every seed."""
    import pandas as pd

    from pelab.report.lm import reading

    rows = []
    for scheme, ratio, far, crop in (("a", 1.02, 10.1, 10.0), ("b", 1.05, 12.0, 10.0), ("b+PI", 1.01, 10.5, None)):
        for seed in (0, 1):
            for pe, split, metric, value in ((scheme, "at_4L", "ppl_ratio", ratio), (scheme, "at_4L", "ppl_sliding", far),
                                             *([(f"{scheme}+crop", "at_4L", "ppl_sliding", crop)] if crop else []),
                                             (scheme, "at_L", "passkey", 0.0), (scheme, "beyond", "passkey", 0.0),
                                             (scheme, "at_L", "passkey_digits", 0.1)):
                rows.append({"task": "lm", "pe": pe, "seed": seed, "split": split, "length": "all", "metric": metric,
                             "value": value})
    text = reading(pd.DataFrame(rows), ["a", "b", "b+PI"], 64, 256)
    assert "`a` 1.01×, `b` 1.20×, `b+PI` 1.05×" in text  # each against its own crop (a variant: its base's)
    assert "flat (both ≤ 1.10× on every seed) for `a` (1.02×), `b+PI` (1.01×)" in text and "`b` (1.05×)" not in text


def test_a_folder_corpus_is_checked_where_it_is_read_not_whenever_params_load(tmp_path):
    """Issue 53: prepared data stays usable once its folder moves; the check stage and prepare still refuse a
    missing folder in one line."""
    from pelab.tasks import get_task

    folder = tmp_path / "gone"
    params = parse_params(_folder_raw(folder))  # loads: every stage after prepare reads params, not the folder
    with pytest.raises(ValueError, match=r"^unknown lm.data.corpus '.*gone': no such corpus or folder; valid "):
        get_task("lm").check_inputs(params.task("lm"))


def test_a_folder_of_a_few_books_is_cut_into_parts_and_a_file_not_in_utf8_is_named(tmp_path):
    """Issue 53: five books, one file each, gave no test document (every 5th is test); files longer than 40,000
    characters are cut into parts at paragraph breaks, held out by part, and evaluation records how many were cut
    (the report says the split is within documents). A file that is not UTF-8 is named in one line."""
    from pelab import io
    from pelab.tasks import get_task
    from pelab.tasks.lm.data.corpus import PART_CHARS, read_folder

    folder = tmp_path / "books"
    folder.mkdir()
    for k in range(5):
        paragraph = " ".join(WORDS[(k * 5 + i) % len(WORDS)] for i in range(60)) + ".\n\n"
        (folder / f"book_{k}.txt").write_text(paragraph * (2 * PART_CHARS // len(paragraph) + 3), encoding="utf-8")
    documents = read_folder(str(folder))
    assert len(documents) == 15 and all(len(text) <= PART_CHARS for text in documents.values())
    assert list(documents)[:3] == ["book_0#0", "book_0#1", "book_0#2"]
    assert "".join(documents[f"book_1#{k}"] for k in range(3)) == (folder / "book_1.txt").read_text()
    params = parse_params(_folder_raw(folder))
    get_task("lm").prepare(params.task("lm"), tmp_path / "data")
    split = io.read_json(tmp_path / "data" / "meta.json")["speeches"]
    assert split["test"] and split["val"] and all("#" in name for names in split.values() for name in names)
    (folder / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1.txt is not UTF-8 text \(invalid continuation byte at byte 3\)"):
        read_folder(str(folder))
