"""The translation study: data loading and checksums, the optional IWSLT path, the tokenizer, the metrics
against sacreBLEU and NLTK, the encoder-decoder's positional wiring, decoding, and a tiny run end to end.

Nothing here touches the network: downloads go through a monkeypatched ``urlopen``."""

from __future__ import annotations

import gzip
import io as _io
import math
import re
import shutil
import urllib.error
import urllib.request
import warnings

import pandas as pd
import pytest
import sacrebleu
import torch
import yaml
from nltk.translate.bleu_score import corpus_bleu
from torch.testing import assert_close

from pelab import io
from pelab.positional import scheme_names
from pelab.positional.none import NoPositionalEncoding
from pelab.tasks import get_task
from pelab.tasks.translation import bleu
from pelab.tasks.translation.config import DecodeConfig, Seq2SeqConfig, TranslationDataConfig
from pelab.tasks.translation.data import (
    BOS_ID,
    EOS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    decode,
    encode,
    iwslt,
    load_prepared,
    multi30k,
    prepare_translation_data,
    train_tokenizer,
)
from pelab.tasks.translation.data.corpora import corpus_names, load_corpus
from pelab.tasks.translation.decoding import beam_search, greedy_decode, max_lengths, translate
from pelab.tasks.translation.evaluate import bucket_labels, bucket_of
from pelab.tasks.translation.model import build_seq2seq_model
from pelab.tasks.translation.task import BucketedBatches

# xpos and mamba are causal only, and the encoder is bidirectional (mamba replaces no attention in the translation
# model: tests/test_ssm.py checks the refusal)
SCHEMES = [s for s in scheme_names() if s not in ("xpos", "mamba")]
VOCAB = 40
SMALL = Seq2SeqConfig(d_model=16, encoder_layers=2, decoder_layers=2, n_heads=2, d_ff=32, dropout=0.0)
POSITIONAL = {"max_positions": 64}  # the learned table; other schemes take their defaults


@pytest.fixture(scope="module")
def multi30k_dir(repo_root):
    """The Multi30k fr/en files shipped with the repository (no network, no ../shared needed)."""
    return repo_root / "corpora" / "multi30k"


def tiny_model(scheme: str, seed: int = 0):
    return build_seq2seq_model(scheme, VOCAB, SMALL, POSITIONAL if scheme == "learned" else None, seed).eval()


def random_source(batch: int = 3, length: int = 7, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, VOCAB, (batch, length), generator=g)
    src[:, -1] = EOS_ID
    return src


# ---------------------------------------------------------------------------------------------
# Multi30k: local files, checksums, download
# ---------------------------------------------------------------------------------------------


def test_shipped_corpus_is_verified_and_a_prepare_dependency(multi30k_dir, repo_root):
    """Every shipped file matches its SHA256SUMS line and the package's checksum; the corpus is a dvc.yaml
    dependency of the prepare stages, so queued and temporary experiments see it."""
    sums = dict(reversed(line.split()) for line in (multi30k_dir / "SHA256SUMS").read_text().splitlines())
    assert set(sums) == {f"{s}.{lang}.gz" for s in multi30k.SPLITS for lang in ("fr", "en")}
    for name, digest in sums.items():
        assert multi30k.sha256_of(multi30k_dir / name) == digest == multi30k.SHA256[name]
    prepare = yaml.safe_load((repo_root / "pipelines/main/prepare/dvc.yaml").read_text())["stages"]["prepare"]
    assert "corpora" in prepare["do"]["deps"]
    assert "Terms" in (multi30k_dir / "README.md").read_text()


def test_package_checksums_match_the_shared_sha256sums(shared_dir):
    multi30k_dir = shared_dir / "data" / "multi30k"
    if not (multi30k_dir / "SHA256SUMS").exists():
        pytest.skip(f"shared Multi30k files not present at {multi30k_dir}")
    published = dict(reversed(line.split()) for line in (multi30k_dir / "SHA256SUMS").read_text().splitlines())
    for name, digest in multi30k.SHA256.items():
        assert published[name] == digest, name
    assert {n for n in published if n.split(".")[1] in ("fr", "en")} == set(multi30k.SHA256)


def test_multi30k_loads_verified_aligned_splits(multi30k_dir, tmp_path):
    data, checksums = multi30k.load_multi30k([tmp_path / "empty", multi30k_dir], allow_download=False,
                                             splits=("val", "test_2016_flickr"))
    assert {s: len(d["fr"]) for s, d in data.items()} == {"val": 1014, "test_2016_flickr": 1000}
    assert all(len(d["fr"]) == len(d["en"]) for d in data.values())
    assert data["test_2016_flickr"]["en"][0] == "A man in an orange hat starring at something."
    assert data["test_2016_flickr"]["fr"][0] == "Un homme avec un chapeau orange regardant quelque chose."
    assert checksums == {n: multi30k.SHA256[n] for n in ("val.fr.gz", "val.en.gz", "test_2016_flickr.fr.gz",
                                                          "test_2016_flickr.en.gz")}
    assert not (tmp_path / "empty").exists(), "nothing is written when the files are found"


def test_corrupted_file_is_a_clear_checksum_error(multi30k_dir, tmp_path):
    shutil.copy(multi30k_dir / "val.en.gz", tmp_path / "val.en.gz")
    shutil.copy(multi30k_dir / "val.fr.gz", tmp_path / "val.fr.gz")
    with open(tmp_path / "val.en.gz", "r+b") as f:
        f.seek(100)
        f.write(b"\x00\x01\x02")
    with pytest.raises(multi30k.ChecksumError, match=r"^checksum mismatch for val\.en\.gz .*expected "
                       + multi30k.SHA256["val.en.gz"]):
        multi30k.load_multi30k([tmp_path, multi30k_dir], allow_download=False, splits=("val",))


class FakeResponse(_io.BytesIO):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_download_fetches_the_canonical_url_and_verifies(multi30k_dir, tmp_path, monkeypatch):
    requested = []

    def fake_urlopen(url, timeout=None):
        requested.append(url)
        return FakeResponse((multi30k_dir / url.rsplit("/", 1)[1]).read_bytes())

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    target = tmp_path / "raw"
    data, _ = multi30k.load_multi30k([target, tmp_path / "other"], splits=("test_2017_flickr",))
    assert requested == [f"{multi30k.BASE_URL}/test_2017_flickr.{lang}.gz" for lang in ("fr", "en")]
    assert requested[0] == "https://github.com/multi30k/dataset/raw/master/data/task1/raw/test_2017_flickr.fr.gz"
    assert sorted(p.name for p in target.iterdir()) == ["test_2017_flickr.en.gz", "test_2017_flickr.fr.gz"]
    assert len(data["test_2017_flickr"]["en"]) == 1000


def test_download_with_wrong_bytes_leaves_nothing_behind(tmp_path, monkeypatch):
    payload = gzip.compress(b"not multi30k\n")
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: FakeResponse(payload))
    with pytest.raises(multi30k.ChecksumError, match=r"^downloaded from https://github\.com/multi30k/.*/val\.fr\.gz: "
                       r"checksum mismatch for val\.fr\.gz"):
        multi30k.load_multi30k([tmp_path], splits=("val",))
    assert list(tmp_path.iterdir()) == []


def test_missing_files_without_network_name_the_dirs_searched(tmp_path, monkeypatch):
    def offline(url, timeout=None):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(urllib.request, "urlopen", offline)
    dirs = [tmp_path / "a", tmp_path / "b"]
    with pytest.raises(FileNotFoundError, match=rf"^Multi30k file val\.fr\.gz not found in {re.escape(str(dirs[0]))}, "
                       rf"{re.escape(str(dirs[1]))}, and downloading .* failed"):
        multi30k.load_multi30k(dirs, splits=("val",))
    with pytest.raises(FileNotFoundError, match=r"downloading is off"):
        multi30k.load_multi30k(dirs, allow_download=False, splits=("val",))


def test_unknown_corpus_lists_the_valid_choices():
    expected = f"unknown translation corpus 'wmt14'; valid choices: {', '.join(corpus_names())}"
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}$"):  # when params load, before any stage runs
        get_task("translation").config({"data": {"corpus": "wmt14"}})
    assert corpus_names() == ["multi30k", "iwslt2017"]


# ---------------------------------------------------------------------------------------------
# IWSLT2017 through HF datasets (a tiny local dataset in the Hub's schema)
# ---------------------------------------------------------------------------------------------

IWSLT_PAIRS = [("Bonjour à tous.", "Hello everyone."), ("Merci beaucoup.", "Thank you very much."),
               ("C'est une idée.", "It is an idea."), ("Nous sommes ici.", "We are here.")]


def iwslt_like():
    import datasets

    def split(pairs):
        return datasets.Dataset.from_dict({"translation": [{"fr": fr, "en": en} for fr, en in pairs]})

    return datasets.DatasetDict({"train": split(IWSLT_PAIRS * 5), "validation": split(IWSLT_PAIRS[:2]),
                                 "test": split(IWSLT_PAIRS[2:])})


def test_iwslt_path_normalises_the_hub_schema_and_prepares(tmp_path, monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        if name is not None:  # the Hub repository ships a script, which datasets >= 4 refuses
            raise RuntimeError("Dataset scripts are no longer supported, but found iwslt2017.py")
        return iwslt_like()

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    corpus = load_corpus("iwslt2017", TranslationDataConfig(download=False))
    assert calls == [("IWSLT/iwslt2017", "iwslt2017-fr-en", {}),
                     ("IWSLT/iwslt2017", None, {"revision": "refs/convert/parquet", "data_dir": "iwslt2017-fr-en"})]
    assert corpus.eval_splits == ("test",)
    assert corpus.splits["val"] == {"fr": [p[0] for p in IWSLT_PAIRS[:2]], "en": [p[1] for p in IWSLT_PAIRS[:2]]}
    assert corpus.splits["test"]["en"] == [p[1] for p in IWSLT_PAIRS[2:]]

    meta = prepare_translation_data(corpus.splits, corpus.eval_splits, tmp_path, vocab_size=60, min_frequency=1,
                                    max_tokens=50)
    prepared = load_prepared(tmp_path)
    assert meta["sizes"]["train"] == {"raw": 20, "kept": 20}
    assert prepared.eval_splits == ["test"]
    assert prepared.text("test", "en") == [p[1] for p in IWSLT_PAIRS[2:]]
    assert all(ids[-1] == EOS_ID for ids in prepared.ids("test", "src_ids"))


def test_iwslt_schema_errors_are_clear():
    import datasets

    bad = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"fr": ["a"], "en": ["b"]})})
    with pytest.raises(ValueError, match=r"lacks split\(s\) \['validation', 'test'\]"):
        iwslt.normalize(bad)


# ---------------------------------------------------------------------------------------------
# Tokenizer and prepared data
# ---------------------------------------------------------------------------------------------

SENTENCES = [
    "Un homme avec un chapeau orange regardant quelque chose.",
    "A man in an orange hat starring at something.",
    "Deux enfants jouent dans l'eau, près d'un bâteau.",
    "Two children play in the water, near a boat.",
    "Une femme âgée de 60 ans lit « Le Monde » !",
]


def test_tokenizer_round_trip_and_special_ids():
    tokenizer = train_tokenizer(SENTENCES * 3, vocab_size=120, min_frequency=1)
    assert [tokenizer.token_to_id(t) for t in SPECIAL_TOKENS] == [PAD_ID, 1, BOS_ID, EOS_ID]
    ids = encode(tokenizer, SENTENCES)
    assert all(1 not in seq for seq in ids), "no <unk> for characters seen in training"
    assert decode(tokenizer, ids) == SENTENCES
    # decoding stops at </s> and drops specials
    assert decode(tokenizer, [[BOS_ID, *ids[1], EOS_ID, *ids[0]]]) == [SENTENCES[1]]


def test_prepare_filters_training_pairs_but_never_test_pairs(tmp_path):
    fr, en = SENTENCES[0::2], SENTENCES[1::2] + [SENTENCES[0]]  # three short pairs
    long_fr, long_en = " ".join(["chat"] * 30), " ".join(["cat"] * 30)  # 30 word tokens per side
    splits = {
        "train": {"fr": fr * 2 + [long_fr], "en": en * 2 + [long_en]},
        "val": {"fr": [fr[0], long_fr], "en": [en[0], long_en]},
        "test": {"fr": [fr[0], long_fr], "en": [en[0], long_en]},
    }
    meta = prepare_translation_data(splits, ["test"], tmp_path, vocab_size=300, min_frequency=1, max_tokens=25)
    assert meta["sizes"] == {"train": {"raw": 7, "kept": 6}, "val": {"raw": 2, "kept": 1},
                             "test": {"raw": 2, "kept": 2}}
    prepared = load_prepared(tmp_path)
    assert prepared.text("test", "fr")[1] == long_fr
    assert max(len(ids) for ids in prepared.ids("train", "tgt_ids")) <= 25


def test_translation_beyond_its_lengths_trains_on_short_sources_and_tests_on_every_length(tmp_path):
    short = [" ".join(["chat"] * n) for n in (2, 3, 4)]
    long_fr = " ".join(["souris"] * 12)  # a word the short pairs never use
    splits = {
        "train": {"fr": short + [long_fr], "en": short + [long_fr]},
        "val": {"fr": short + [long_fr], "en": short + [long_fr]},
        "test": {"fr": short + [long_fr], "en": short + [long_fr]},
    }
    meta = prepare_translation_data(splits, ["test"], tmp_path, vocab_size=300, min_frequency=1, max_tokens=100,
                                    train_max_source_words=4)
    assert meta["sizes"]["train"]["kept"] == 3 and meta["sizes"]["val"]["kept"] == 3
    assert meta["sizes"]["test"]["kept"] == 4 and meta["train_max_source_words"] == 4
    prepared = load_prepared(tmp_path)
    assert max(len(text.split()) for text in prepared.text("train", "fr")) == 4
    assert prepared.text("test", "fr")[3] == long_fr
    assert "souris" not in prepared.tokenizer.get_vocab() and "▁souris" not in prepared.tokenizer.get_vocab()


# ---------------------------------------------------------------------------------------------
# Metrics against sacreBLEU and NLTK
# ---------------------------------------------------------------------------------------------

HYPS = ["A man in an orange hat looking at something.", "Two kids are playing in the water near a boat.",
        "The woman reads a newspaper!", "A dog runs."]
REFS = ["A man in an orange hat starring at something.", "Two children play in the water, near a boat.",
        "An old woman reads « Le Monde »!", "A black dog is running on the grass."]


def test_bleu_and_chrf_equal_sacrebleu():
    score, signature = bleu.sacrebleu_score(HYPS, REFS)
    assert score == pytest.approx(sacrebleu.corpus_bleu(HYPS, [REFS]).score, abs=1e-12)
    assert 0 < score < 100
    assert {"nrefs:1", "case:mixed", "tok:13a", "smooth:exp"} <= set(signature.split("|"))
    chrf, chrf_signature = bleu.chrf_score(HYPS, REFS)
    assert chrf == pytest.approx(sacrebleu.corpus_chrf(HYPS, [REFS]).score, abs=1e-12)
    assert chrf_signature.startswith("nrefs:1|case:mixed")
    assert bleu.sacrebleu_score(REFS, REFS)[0] == pytest.approx(100.0)
    assert bleu.sacrebleu_score(HYPS.copy(), [h.lower() for h in HYPS])[0] < 100.0, "BLEU is cased"


def test_nltk_word_bleu_is_nltk_on_words_and_differs_from_characters():
    words = [bleu.word_tokens(s) for s in HYPS]
    assert words[1] == ["Two", "kids", "are", "playing", "in", "the", "water", "near", "a", "boat", "."]
    expected = 100 * corpus_bleu([[bleu.word_tokens(r)] for r in REFS], words)
    assert bleu.nltk_word_bleu(HYPS, REFS) == pytest.approx(expected, abs=1e-12)
    chars = 100 * corpus_bleu([[r] for r in REFS], HYPS)  # raw strings: NLTK counts characters
    assert bleu.nltk_char_bleu(HYPS, REFS) == pytest.approx(chars, abs=1e-12)
    assert bleu.nltk_char_bleu(HYPS, REFS) > bleu.nltk_word_bleu(HYPS, REFS) + 10
    # with every n-gram order matched, NLTK on 13a words equals sacreBLEU
    sacre = bleu.sacrebleu_score(HYPS[:2], REFS[:2])[0]
    assert bleu.nltk_word_bleu(HYPS[:2], REFS[:2]) == pytest.approx(sacre, abs=1e-9)


def test_nltk_corpus_bleu_is_nltks_to_the_last_bit_on_random_corpora():
    """pelab's re-written ``corpus_bleu`` against NLTK's own, on corpora where every branch is taken: empty and
    one-token hypotheses, no unigram match (0), a matched order followed by an unmatched one (about 1e-77), longer
    and shorter than the references (the brevity penalty), words and characters."""
    import random

    rng = random.Random(0)
    for trial in range(300):
        vocab = "abcdefgh"[:rng.randint(1, 8)]
        corpus = [("".join(rng.choices(vocab, k=rng.randint(0, 9))), "".join(rng.choices(vocab, k=rng.randint(1, 9))))
                  for _ in range(rng.randint(1, 5))]
        hyps, refs = [h for h, _ in corpus], [r for _, r in corpus]
        for hyp_tokens, ref_tokens in ((hyps, refs), ([list(h) for h in hyps], [list(r) for r in refs]),
                                       ([h.split("a") for h in hyps], [r.split("a") for r in refs])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NLTK warns when an order has no match
                expected = corpus_bleu([[r] for r in ref_tokens], hyp_tokens)
            assert bleu.nltk_corpus_bleu(ref_tokens, hyp_tokens) == expected, (trial, hyp_tokens, ref_tokens)
    assert bleu.nltk_corpus_bleu(["abcd"], ["xyz"]) == 0.0
    assert 0 < bleu.nltk_corpus_bleu(["abcd"], ["abdc"]) < 1e-70  # unigrams and bigrams match, no 3-gram


def test_metrics_reject_unpaired_input():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        bleu.score_corpus(HYPS[:2], REFS[:1])


# ---------------------------------------------------------------------------------------------
# The encoder-decoder's positional wiring
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
@pytest.mark.parametrize("length", [8, 16], ids=["train_len", "2x"])
def test_forward_shapes_for_every_scheme(scheme, length):
    model = tiny_model(scheme)
    src = random_source(2, length)
    tgt = torch.cat([torch.full((2, 1), BOS_ID), random_source(2, length - 1, seed=1)], dim=1)
    logits = model(src, tgt)
    assert logits.shape == (2, length, VOCAB) and logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_decoder_is_causal(scheme):
    model = tiny_model(scheme)
    src = random_source(2, 6)
    tgt = torch.tensor([[BOS_ID, 5, 6, 7, 8, 9], [BOS_ID, 9, 8, 7, 6, 5]])
    changed = tgt.clone()
    changed[:, 4:] = torch.tensor([11, 12])
    before, after = model(src, tgt), model(src, changed)
    assert_close(before[:, :4], after[:, :4], rtol=0, atol=0)
    assert not torch.allclose(before[:, 4:], after[:, 4:])


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_cross_attention_gets_the_null_scheme(scheme):
    model = tiny_model(scheme)
    assert type(model.decoder.cross_pe) is NoPositionalEncoding
    assert model.encoder.pe.causal is False and model.decoder.pe.causal is True
    assert type(model.encoder.pe) is type(model.decoder.pe) and model.encoder.pe is not model.decoder.pe
    seen = []
    for layer in model.decoder.layers:
        original = layer.cross_attn.forward

        def spy(*args, _original=original, **kwargs):
            seen.append(kwargs["pe"])
            return _original(*args, **kwargs)

        layer.cross_attn.forward = spy
    model(random_source(1, 5), torch.tensor([[BOS_ID, 5, 6]]))
    assert len(seen) == SMALL.decoder_layers and all(pe is model.decoder.cross_pe for pe in seen)


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_source_padding_does_not_change_the_output(scheme):
    """A sentence decodes the same alone or padded in a batch beside a longer one (every scheme, incl.
    direction-aware ALiBi, whose right-looking heads see nothing from a trailing pad)."""
    model = tiny_model(scheme)
    short, long = random_source(1, 5)[0], random_source(1, 9, seed=3)[0]
    batch = torch.full((2, 9), PAD_ID)
    batch[0, :5], batch[1] = short, long
    tgt = torch.tensor([[BOS_ID, 5, 6, 7]])
    alone = model(short[None], tgt)
    padded = model(batch, tgt.expand(2, -1))
    assert_close(padded[:1], alone, rtol=1e-5, atol=1e-5)
    assert torch.isfinite(padded).all()


def test_same_seed_same_shared_initial_weights_across_schemes():
    plain, rope, learned = tiny_model("none"), tiny_model("rope"), tiny_model("learned")
    for other in (rope, learned):
        shared = {n: p for n, p in other.named_parameters() if ".pe." not in n}
        for name, param in plain.named_parameters():
            assert_close(shared[name], param, rtol=0, atol=0, msg=name)
    assert not torch.equal(tiny_model("none", seed=1).embedding.weight, plain.embedding.weight)


def test_output_projection_is_tied_to_the_embedding():
    model = tiny_model("sinusoidal")
    hidden = torch.randn(2, 3, SMALL.d_model)
    assert_close(model.logits(hidden), hidden @ model.embedding.weight.T)
    assert not any(p.shape == (VOCAB, SMALL.d_model) and p is not model.embedding.weight for p in model.parameters())


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES, ids=SCHEMES)
def test_incremental_decoding_equals_the_full_decoder(scheme):
    """decode_step with cached keys/values gives the teacher-forced logits at every position."""
    model = tiny_model(scheme, seed=1)
    src = random_source(2, 9)
    src[1, 6:] = PAD_ID  # a shorter sentence in the batch
    src[1, 5] = EOS_ID
    tgt = torch.cat([torch.full((2, 1), BOS_ID), random_source(2, 7, seed=4)], dim=1)  # (2, 8)
    full = model(src, tgt)
    memory, padding, _ = model.encode(src)
    state = model.start_decoding(memory, padding)
    steps = torch.stack([model.decode_step(tgt[:, t], state) for t in range(tgt.shape[1])], dim=1)
    assert_close(steps, full, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scheme", ["none", "sinusoidal", "rope", "alibi", "t5"])
def test_greedy_equals_beam_search_with_one_beam_and_no_length_penalty(scheme):
    model = tiny_model(scheme, seed=2)
    src = random_source(4, 6, seed=5)
    limit = torch.tensor([3, 9, 12, 12])
    greedy = greedy_decode(model, src, limit)
    assert greedy == beam_search(model, src, limit, beam_size=1, length_penalty=0.0)
    assert all(len(h) < n for h, n in zip(greedy, limit.tolist()))  # </s> counts towards the limit


def test_beam_search_scores_at_least_as_well_as_greedy():
    model = tiny_model("rope", seed=3)
    src = random_source(3, 6, seed=7)
    limit = torch.tensor([8, 8, 8])

    @torch.no_grad()
    def log_prob(hyp, row):
        tgt = torch.tensor([[BOS_ID, *hyp]])
        logits = model(src[row : row + 1], tgt).log_softmax(-1)[0]
        target = [*hyp, EOS_ID][: len(hyp) + 1]
        return float(sum(logits[i, t] for i, t in enumerate(target)))

    greedy, beam = greedy_decode(model, src, limit), beam_search(model, src, limit, beam_size=4, length_penalty=0.0)
    for row in range(3):
        if len(greedy[row]) < 7 and len(beam[row]) < 7:  # both ended with </s>
            assert log_prob(beam[row], row) >= log_prob(greedy[row], row) - 1e-4


class MockState:
    """What beam search keeps per row: here only the prefix fed so far."""

    def __init__(self, rows: int) -> None:
        self.prefixes: list[tuple[int, ...]] = [() for _ in range(rows)]

    def reorder(self, index: torch.Tensor, memory: bool = True) -> None:
        self.prefixes = [self.prefixes[i] for i in index.tolist()]


class MockSeq2Seq:
    """A decoder whose next-token distribution is a fixed function of the prefix: ``probs(prefix) -> {token: p}``
    (tokens not listed get a tiny probability). Ignores the source."""

    def __init__(self, probs, vocab: int = 10) -> None:
        self.probs, self.vocab = probs, vocab

    def encode(self, src):
        return torch.zeros(src.shape[0], 1, 1), torch.zeros(src.shape[0], 1, dtype=torch.bool), None

    def start_decoding(self, memory, padding):
        return MockState(memory.shape[0])

    def decode_step(self, tokens, state):
        rows = []
        for r, token in enumerate(tokens.tolist()):
            state.prefixes[r] = (*state.prefixes[r], token)
            p = torch.full((self.vocab,), 1e-9)
            for tok, value in self.probs(state.prefixes[r][1:]).items():  # without <s>
                p[tok] = value
            rows.append((p / p.sum()).log())
        return torch.stack(rows)


A, B, C, D = 4, 5, 6, 7


def test_beam_search_does_not_return_the_empty_translation():
    """The review's case: </s> first is likely, but `A D </s>` has the better normalised score."""
    table = {(): {EOS_ID: 0.5, A: 0.3, B: 0.2}, (A,): {D: 0.9, EOS_ID: 0.1}, (A, D): {EOS_ID: 0.9, C: 0.1},
             (B,): {EOS_ID: 0.5, C: 0.5}}
    model = MockSeq2Seq(lambda prefix: table.get(prefix, {EOS_ID: 1.0}))
    src = torch.zeros(1, 3, dtype=torch.long)
    assert beam_search(model, src, torch.tensor([6]), beam_size=2, length_penalty=1.0) == [[A, D]]
    assert greedy_decode(model, src, torch.tensor([6])) == [[A, D]]  # </s> is masked before the first token


def test_beam_search_finishes_hypotheses_only_from_the_top_k_candidates_as_fairseq_and_hf_do():
    """K = 1: after `A`, the candidates ranked are `A B` (0.30) then `A </s>` (0.24), outside the top 1, so `A`
    is not finished there (fairseq: ``eos_mask[:, :beam_size]``; HF: ``beam_token_rank >= num_beams``); `A B </s>`
    (0.18) is. Finishing from the whole top 2K would return `A`."""
    table = {(): {A: 0.6, C: 0.4}, (A,): {B: 0.5, EOS_ID: 0.4, D: 0.1}, (A, B): {EOS_ID: 0.6, C: 0.4}}
    model = MockSeq2Seq(lambda prefix: table.get(prefix, {EOS_ID: 1.0}))
    src = torch.zeros(1, 3, dtype=torch.long)
    assert beam_search(model, src, torch.tensor([6]), beam_size=1, length_penalty=0.0) == [[A, B]]


def exhaustive_best(probs, vocab, limit, length_penalty):
    """Every hypothesis of up to ``limit`` tokens (</s> included, no special token, at least one word)."""
    words = [t for t in range(vocab) if t not in (PAD_ID, UNK_ID, BOS_ID, EOS_ID)]
    best, frontier = (float("-inf"), None), [((), 0.0)]
    for length in range(1, limit + 1):
        grown = []
        for prefix, log_p in frontier:
            dist = probs(prefix)
            total = sum(dist.get(t, 1e-9) for t in range(vocab))
            if prefix:
                end = log_p + math.log(dist.get(EOS_ID, 1e-9) / total)
                best = max(best, (end / length**length_penalty, prefix))
            if length < limit:
                grown += [((*prefix, w), log_p + math.log(dist.get(w, 1e-9) / total)) for w in words]
        frontier = grown
    return list(best[1])


@pytest.mark.parametrize("length_penalty", [0.0, 0.6, 1.0, 2.0])
@pytest.mark.parametrize("seed", range(4))
def test_beam_search_with_a_beam_holding_every_prefix_is_exhaustive_search(seed, length_penalty):
    vocab, limit = 7, 4  # words 4, 5, 6: at most 3^3 live prefixes
    g = torch.Generator().manual_seed(seed)
    cache = {}

    def probs(prefix):
        if prefix not in cache:
            raw = torch.rand(vocab, generator=g) ** 3
            cache[prefix] = {t: float(raw[t]) for t in range(vocab)}
        return cache[prefix]

    expected = exhaustive_best(probs, vocab, limit, length_penalty)
    model = MockSeq2Seq(probs, vocab)
    found = beam_search(model, torch.zeros(1, 2, dtype=torch.long), torch.tensor([limit]), beam_size=27,
                        length_penalty=length_penalty)
    assert found == [expected]


def test_beam_and_greedy_never_emit_special_tokens():
    model = MockSeq2Seq(lambda prefix: {PAD_ID: 0.4, UNK_ID: 0.3, BOS_ID: 0.2, A: 0.05, EOS_ID: 0.05})
    src = torch.zeros(2, 3, dtype=torch.long)
    for hyps in (beam_search(model, src, torch.tensor([5, 5]), beam_size=3), greedy_decode(model, src, torch.tensor([5, 5]))):
        for hyp in hyps:
            assert hyp and not set(hyp) & {PAD_ID, UNK_ID, BOS_ID, EOS_ID}, hyp


def test_translate_batches_and_caps_lengths():
    model = tiny_model("learned", seed=4)
    cfg = DecodeConfig(beam_size=3, max_len_a=1.0, max_len_b=2, batch_size=4)
    sources = [random_source(1, n, seed=n)[0].tolist() for n in (3, 9, 5, 12, 4)]
    assert max_lengths([3, 12], cfg, max_positions=10) == [5, 10]
    one_by_one = [translate(model, [s], cfg, beam_size=3, max_positions=64)[0] for s in sources]
    assert translate(model, sources, cfg, beam_size=3, max_positions=64) == one_by_one
    too_long = [random_source(1, 80, seed=9)[0].tolist()]
    assert len(translate(model, too_long, cfg, beam_size=1, max_positions=64)[0]) < 64


# ---------------------------------------------------------------------------------------------
# Study helpers and a tiny run end to end
# ---------------------------------------------------------------------------------------------


def test_bucketed_batches_are_seeded_epochs():
    src = [[4] * (1 + i % 7) for i in range(50)]
    tgt = [[5] * (1 + i % 5) for i in range(50)]
    first, again = BucketedBatches(src, tgt, 8, seed=0), BucketedBatches(src, tgt, 8, seed=0)
    epoch = [first(step) for step in range(7)]  # ceil(50 / 8) batches per epoch
    for a, b in zip(epoch, (again(step) for step in range(7))):
        assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert sum(batch[0].shape[0] for batch in epoch) == 50 and first.epochs == 1
    assert not torch.equal(BucketedBatches(src, tgt, 8, seed=1)(0)[0], epoch[0][0])
    src_batch, tgt_in, tgt_out = epoch[0]
    assert (tgt_in[:, 0] == BOS_ID).all()  # <s> y  ->  y </s>
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1].masked_fill(tgt_out[:, :-1] == EOS_ID, PAD_ID))
    assert ((tgt_out == EOS_ID).sum(dim=1) == 1).all()


def test_length_buckets():
    assert bucket_labels([10, 15, 20]) == ["1-10", "11-15", "16-20", "21+"]
    assert [bucket_of(n, [10, 15, 20]) for n in (1, 10, 11, 20, 21, 99)] == [0, 0, 1, 2, 3, 3]


def test_tiny_study_end_to_end(multi30k_dir, repo_root, tmp_path):
    """prepare -> train -> evaluate -> aggregate -> report section, two schemes x two seeds, through the runner."""
    import subprocess

    import yaml
    from conftest import study_of

    from pelab.aggregate import aggregate
    from pelab.compose import compose_params
    from pelab.params import load_params
    from pelab.report.context import ReportContext
    from pelab.report.translation import section as translation_section
    from pelab.runner.evaluate import evaluate_run
    from pelab.runner.train import train_run
    from pelab.tasks import get_task

    raw = compose_params(repo_root / "conf", ["profile=smoke", "pe.schemes=[none,rope]", "seeds=[0,1]",
                                              "tasks=[translation]", "length_tasks=[]", "lm_tasks=[]"])
    raw["translation"]["data"].update(search_dirs=[str(multi30k_dir)], train_sentences=120, test_sentences=6)
    raw["translation"]["train"].update(steps=4, log_every=2, val_sentences=8)
    raw["translation"]["eval"]["examples"] = [0, 3]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    params = load_params(tmp_path / "params.yaml")

    get_task("translation").prepare(params.task("translation"), tmp_path / "data/translation")
    for scheme in params.schemes:
        for seed in params.seeds:
            run = tmp_path / f"runs/translation/{scheme}/seed_{seed}"
            train_run(params, "translation", scheme, seed, tmp_path / "data/translation", run, device="cpu")
            evaluate_run(params, run, tmp_path / "data/translation", tmp_path / f"results/translation/{scheme}/seed_{seed}",
                         device="cpu")
    records = pd.concat([pd.DataFrame(io.read_jsonl(tmp_path / f"results/translation/rope/seed_{seed}/records.jsonl"))
                         for seed in (0, 1)])
    overall = records[records["length"] == "all"]
    for split in ("test_2016_flickr", "test_2017_flickr"):
        for metric in ("bleu_beam", "chrf_greedy", "nltk_bleu_beam", "nltk_char_bleu_beam"):
            values = overall[(overall["split"] == split) & (overall["metric"] == metric)]["value"]
            assert len(values) == 2 and values.between(0, 100).all(), (split, metric)
        assert overall[(overall["split"] == split) & overall["metric"].str.startswith("nltk")]["metric"].str.endswith(
            "_beam").all()  # NLTK scores the beam output only (the report reads no other)
    assert set(records["length"]) >= {"all", "1-10"}
    captured = torch.load(tmp_path / "results/translation/rope/seed_1/probe.pt", weights_only=True)
    source, target = len(captured["src_labels"]), len(captured["tgt_labels"])
    assert captured["split"] == "test_2016_flickr" and captured["index"] == 0  # the first example, headline split
    assert captured["attention"]["cross"].shape[-2:] == (target, source)
    examples = io.read_jsonl(tmp_path / "results/translation/rope/seed_1/examples.jsonl")
    assert [e["index"] for e in examples] == [0, 3]
    assert examples[0]["reference"] == "A man in an orange hat starring at something."

    # Anyone can re-score a run: the sacrebleu command line on the saved files gives the recorded BLEU.
    result = tmp_path / "results/translation/rope/seed_0"
    recorded = overall[(overall["seed"] == 0) & (overall["split"] == "test_2016_flickr")
                       & (overall["metric"] == "bleu_beam")]["value"].item()
    cli = subprocess.run(["sacrebleu", str(result / "refs/test_2016_flickr.en"), "-i",
                          str(result / "hyps/test_2016_flickr.beam.en"), "-m", "bleu", "-b", "-w", "6"],
                         capture_output=True, text=True, check=True)
    assert float(cli.stdout.strip()) == pytest.approx(recorded, abs=1e-6)

    aggregate(params, tmp_path / "runs", tmp_path / "results", tmp_path / "metrics", tmp_path / "summary.json",
              tmp_path / "records.csv", tmp_path / "plots")
    key = io.read_json(tmp_path / "metrics/translation/rope.json")  # what `dvc metrics show` prints
    assert set(key) == {"bleu", "chrf", "bleu17"}
    summary = io.read_json(tmp_path / "summary.json")["translation"]
    assert set(summary) == {"none", "rope"}
    bleu = summary["rope"]["test_2016_flickr"]["bleu_beam"]
    assert key["bleu"] == round(bleu["mean"], 4) and bleu["n"] == 2 and bleu["ci_low"] <= bleu["mean"]
    assert {"test_2017_flickr", "val"} <= set(summary["rope"])
    val_curve = pd.read_csv(tmp_path / "plots/translation_val_loss.csv")
    assert list(val_curve.columns) == ["scheme", "step", "val_loss"] and len(val_curve) == 4

    all_records = pd.read_csv(tmp_path / "records.csv", dtype={"length": str})
    curves = pd.read_csv(tmp_path / "plots/curves_per_seed.csv")
    (tmp_path / "fig").mkdir()
    ctx = ReportContext(study_of(params), all_records, curves, tmp_path / "runs", tmp_path / "results", tmp_path / "fig")
    text = "\n".join(translation_section(ctx))
    assert "## Translation (French → English)" in text and "Profile **smoke**" in text
    assert "nrefs:1|case:mixed|eff:no|tok:13a" in text
    assert "| `none` | 2 |" in text and "| `rope` | 2 |" in text
    assert text.count("A man in an orange hat starring at something.") == 1
    assert (tmp_path / "fig/translation_bleu_by_length.png").stat().st_size > 5000
    assert (tmp_path / "fig/translation_loss_curves.png").stat().st_size > 5000


def test_prepared_splits_load_without_hf_datasets_and_equal_what_datasets_reads(tmp_path, monkeypatch):
    """Training and evaluation read the prepared splits with pyarrow alone (a GPU image may lack `datasets`)."""
    import sys

    from conftest import smoke_params
    from datasets import load_from_disk

    from pelab.tasks import get_task
    from pelab.tasks.translation.data.prepare import load_prepared

    params = smoke_params(tmp_path)
    get_task("translation").prepare(params.task("translation"), tmp_path / "data")
    reference = load_from_disk(str(tmp_path / "data" / "splits"))
    monkeypatch.setitem(sys.modules, "datasets", None)  # `import datasets` now fails
    data = load_prepared(tmp_path / "data")
    assert set(data.splits) == set(reference)
    for split in reference:
        for column in ("fr", "en", "src_ids", "tgt_ids"):
            assert data.column(split, column) == list(reference[split][column]), (split, column)


def test_eval_splits_scores_only_the_listed_test_sets(multi30k_dir, repo_root, tmp_path):
    """``translation.eval.splits`` (the quick profile's test_2016_flickr only): the listed split is decoded and
    scored exactly as when every split is, the other is not touched; an unknown or empty list is refused at load,
    in one line naming the value and the valid splits."""
    import dataclasses

    from pelab.compose import compose_params
    from pelab.params import load_params
    from pelab.runner.evaluate import evaluate_run
    from pelab.runner.train import train_run
    from pelab.tasks import get_task

    raw = compose_params(repo_root / "conf", ["profile=smoke", "pe.schemes=[rope]", "seeds=[0]",
                                              "tasks=[translation]", "length_tasks=[]", "lm_tasks=[]"])
    raw["translation"]["data"].update(search_dirs=[str(multi30k_dir)], train_sentences=120, test_sentences=6)
    raw["translation"]["train"].update(steps=3, log_every=3, val_sentences=8)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    params = load_params(tmp_path / "params.yaml")
    data, run = tmp_path / "data", tmp_path / "run"
    get_task("translation").prepare(params.task("translation"), data)
    train_run(params, "translation", "rope", 0, data, run, device="cpu")

    cfg = params.task("translation")
    only = dataclasses.replace(cfg, eval=dataclasses.replace(cfg.eval, splits=("test_2016_flickr",)))
    subset = dataclasses.replace(params, task_configs={**params.task_configs, "translation": only})
    every = evaluate_run(params, run, data, tmp_path / "every", device="cpu")
    listed = evaluate_run(subset, run, data, tmp_path / "listed", device="cpu")

    def scores(rows):
        return {(r["split"], r["length"], r["metric"]): r["value"] for r in rows if "time" not in r["metric"]}

    assert {r["split"] for r in listed} == {"test_2016_flickr", "eval"}
    assert scores(listed) == {k: v for k, v in scores(every).items() if k[0] == "test_2016_flickr"}
    assert io.read_json(tmp_path / "listed/eval_meta.json")["eval_splits"] == ["test_2016_flickr"]
    assert not (tmp_path / "listed/hyps/test_2017_flickr.beam.en").exists()

    raw["translation"]["eval"]["splits"] = ["test_2018_flickr"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match=r"unknown translation.eval.splits \['test_2018_flickr'\] for corpus "
                                         r"'multi30k'; valid choices: test_2016_flickr, test_2017_flickr"):
        load_params(tmp_path / "params.yaml")
    raw["translation"]["eval"]["splits"] = []
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="translation.eval.splits must list distinct split names"):
        load_params(tmp_path / "params.yaml")


def test_the_paired_bootstrap_is_recorded_per_seed_and_the_report_counts_the_seeds_that_agree(tmp_path):
    """The aggregate stage's records of sacreBLEU's paired bootstrap against the reference (``bootstrap_records``)
    are its numbers, one pair per (scheme, seed), on the references of the beamed sentences; the report's table reads
    them and counts the seeds with p < 0.05 either way."""
    from pelab.tasks.translation.paired import bootstrap_records
    from pelab.analysis.bootstrap import paired_bootstrap
    from pelab.report.translation import _paired_bootstrap

    refs = [f"the cat number {i} sat on the red mat today" for i in range(40)]
    n = 36  # beams for the first 36 sentences only (translation.eval.beam_sentences): references cut to them
    half = refs[:18] + ["the cat sat"] * 18
    beams = {0: {"sinusoidal": half, "rope": refs[:n], "none": ["a dog"] * n},  # rope better, none worse
             1: {"sinusoidal": half, "rope": refs[:6] + ["the cat sat"] * 30, "none": ["a dog"] * n}}  # both worse
    split = "test_2016_flickr"
    for seed, outputs in beams.items():
        for scheme, lines in outputs.items():
            out = io.run_dir(tmp_path, "translation", scheme, seed)
            (out / "hyps").mkdir(parents=True)
            (out / "refs").mkdir()
            (out / "hyps" / f"{split}.beam.en").write_text("\n".join(lines) + "\n")
            (out / "refs" / f"{split}.en").write_text("\n".join(refs) + "\n")
            io.write_json(out / "eval_meta.json", {"eval_splits": [split, "test_2017_flickr"]})
    schemes = ["sinusoidal", "rope", "none"]
    records = pd.DataFrame(bootstrap_records(schemes, [0, 1], "sinusoidal", tmp_path))
    assert len(records) == 8 and set(records["split"]) == {split} and set(records["pe"]) == {"rope", "none"}
    for seed, outputs in beams.items():
        expected = paired_bootstrap(outputs["sinusoidal"], {s: outputs[s] for s in ("rope", "none")}, refs[:n])
        for scheme, result in expected.items():
            mine = records[(records["pe"] == scheme) & (records["seed"] == seed)].set_index("metric")["value"]
            assert mine["bootstrap_delta_bleu"] == result["bleu"] - result["baseline_bleu"]
            assert mine["bootstrap_p"] == result["p"]
            assert result["p"] < 0.05
    deltas = records[records["metric"] == "bootstrap_delta_bleu"].set_index(["pe", "seed"])["value"]
    assert deltas["rope", 0] > 0 > deltas["rope", 1] and deltas["none", 0] < 0 and deltas["none", 1] < 0
    table = _paired_bootstrap(records, schemes, [0, 1], split, "sinusoidal")
    assert "| `rope` | +" in table and table.count("| 1 / 1 |") == 1 and table.count("| 0 / 2 |") == 1
    assert _paired_bootstrap(records, ["rope", "none"], [0, 1], split, "sinusoidal") == ""  # no reference
    assert _paired_bootstrap(records, schemes, [0, 1, 2], split, "sinusoidal") == ""  # a seed without records
    assert bootstrap_records(["rope", "none"], [0, 1], "sinusoidal", tmp_path) == []  # no reference among them
    (io.run_dir(tmp_path, "translation", "sinusoidal", 1) / "eval_meta.json").unlink()
    assert bootstrap_records(schemes, [0, 1], "sinusoidal", tmp_path) == []  # a run without its settings
    (io.run_dir(tmp_path, "translation", "none", 0) / "hyps" / f"{split}.beam.en").unlink()
    assert bootstrap_records(schemes, [0], "sinusoidal", tmp_path) == []  # a run saved no beams
