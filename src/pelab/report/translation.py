"""The translation study's section of the report: BLEU and chrF per scheme with paired bootstrap resampling
(sacreBLEU), BLEU by source length, loss curves, NLTK BLEU beside the reference report, examples, cost.

sacreBLEU's paired bootstrap resampling between systems (Koehn 2004, https://aclanthology.org/W04-3250/),
the field's standard test for a BLEU difference on one test set, run on the hypotheses every evaluation saves.

It answers a different question from the sign-flip test over seeds: for one trained model of each scheme,
is the BLEU difference larger than the sampling noise of the test sentences? It says nothing about another
training seed, so the report runs it once per seed and shows how many seeds agree.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from pelab import io
from pelab.report.context import ReportContext
from pelab.report.copy import choices
from pelab.report.style import draw_curves, save, scheme_palette
from pelab.report.tables import (
    comparison_table,
    cost_table,
    difference_matrix,
    format_p,
    markdown_table,
    reference_tests,
    seed_values,
)
from pelab.stats import format_mean_sd, summarize

TASK = "translation"

BLEU_BY_LENGTH, LOSS = "translation_bleu_by_length.png", "translation_loss_curves.png"

# The reference report's NLTK "BLEU-4" (IWSLT2017 fr-en, best of three runs, raw strings -> character n-grams).
REFERENCE_NLTK = {"sinusoidal": 0.3187, "learned": 0.3717, "rope": 0.5594}


PROFILE_NOTES = {
    "full": "Profile **full**: the strong-baseline configuration, meant for one GPU.",
    "quick": (
        "Profile **quick**: a CPU-sized model and schedule so that the whole study (every scheme × every seed) "
        "runs in about half an hour on two CPU cores. Its BLEU ranks the schemes under a small budget; it is "
        "not comparable with published Multi30k results — `profile=full` is the strong baseline."
    ),
    "smoke": "Profile **smoke**: seconds per run, for the end-to-end test. These numbers mean nothing.",
    "full_shape": "Profile **full_shape**: the full profile's shapes trained for two steps, to check that a study "
                  "at full size runs. These numbers mean nothing.",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _mean(records: pd.DataFrame, scheme: str, split: str, metric: str) -> dict[str, float]:
    return summarize(seed_values(records, TASK, scheme, split, metric))


def _reading(records: pd.DataFrame, schemes: list[str], split: str, best: str, reference: str) -> str:
    """Sentences from the numbers: the highest mean, each scheme against the declared reference, the control."""
    key = "bleu_beam"
    best_mean = format_mean_sd(_mean(records, best, split, key), 2)
    parts = [f"Highest mean beam-search BLEU on {split}: `{best}` ({best_mean}); chosen after the fact, so it is "
             "described, not tested."]
    if reference in schemes:
        tests = reference_tests(records, TASK, schemes, reference, split, key)
        consistent = [s for s, t in tests.items() if t["p"] <= t["min_p"] + 1e-12]
        if consistent:
            parts.append(f"Against the reference `{reference}`, every seed moves the same way for "
                         + ", ".join(f"`{s}` ({tests[s]['mean_diff']:+.2f})" for s in consistent)
                         + f" (sign-flip p = {format_p(tests[consistent[0]]['min_p'])}, the smallest "
                         f"{tests[consistent[0]]['n']} seeds allow).")
        mixed = [s for s in tests if s not in consistent]
        if mixed:
            parts.append("Seeds disagree in sign for "
                         + ", ".join(f"`{s}` ({tests[s]['mean_diff']:+.2f})" for s in mixed)
                         + ": no evidence of a difference from the reference.")
    if "none" in schemes and best != "none":
        gap = _mean(records, best, split, key)["mean"] - _mean(records, "none", split, key)["mean"]
        parts.append(
            f"Without any positional information (`none`) the encoder sees a bag of source tokens and the decoder "
            f"only a causal mask (which leaks position implicitly); it trails the best scheme by {gap:.2f} BLEU."
        )
    return " ".join(parts)


def _paired_bootstrap(ctx: ReportContext, schemes: list[str], split: str) -> list[str]:
    """sacreBLEU's paired bootstrap of every scheme against the reference, once per seed, on the saved beams."""
    reference = ctx.params.reference
    if reference not in schemes or ctx.results_root is None:
        return []
    rows, per_seed = [], {}
    for seed in ctx.seeds:
        base = ctx.result_path(TASK, reference, seed)
        if not (base / "hyps" / f"{split}.beam.en").exists():
            return []
        others = {s: read_lines(ctx.result_path(TASK, s, seed) / "hyps" / f"{split}.beam.en")
                  for s in schemes if s != reference}
        refs = read_lines(base / "refs" / f"{split}.en")
        beams = read_lines(base / "hyps" / f"{split}.beam.en")
        per_seed[seed] = paired_bootstrap(beams, others, refs[: len(beams)])
    for scheme in schemes:
        if scheme == reference:
            continue
        cells = [f"{r['bleu'] - r['baseline_bleu']:+.2f} (p={format_p(r['p'])})"
                 for r in (per_seed[seed][scheme] for seed in ctx.seeds)]
        results = [per_seed[k][scheme] for k in ctx.seeds]
        better = sum(r["p"] < 0.05 and r["bleu"] > r["baseline_bleu"] for r in results)
        worse = sum(r["p"] < 0.05 and r["bleu"] < r["baseline_bleu"] for r in results)
        rows.append([f"`{scheme}`", *cells, f"{better} / {worse}"])
    header = ["scheme", *[f"seed {k}: ΔBLEU (p)" for k in ctx.seeds], "seeds p < 0.05: better / worse"]
    return [
        "### Paired bootstrap resampling (sacreBLEU)",
        "",
        f"The field's standard test of a BLEU difference on one test set (Koehn 2004; `sacrebleu --paired-bs`, "
        f"{RESAMPLES} resamples of the {split} sentences), each scheme's beam output against the reference "
        f"`{reference}`'s, once per seed. It measures test-set sampling noise for one trained model, not "
        "training-seed noise: a difference that is significant for one seed and not another is not robust.",
        "",
        markdown_table(header, rows),
        "",
    ]


def _nltk_table(records: pd.DataFrame, schemes: list[str], split: str) -> str:
    header = ["scheme", "sacreBLEU", "NLTK corpus_bleu, 13a word tokens (×100)",
              "NLTK corpus_bleu on raw strings = characters (×100)", "reference report (its NLTK ×100)"]
    rows = []
    for scheme in schemes:
        ref = REFERENCE_NLTK.get(scheme)
        rows.append([
            f"`{scheme}`",
            format_mean_sd(_mean(records, scheme, split, "bleu_beam"), 2),
            format_mean_sd(_mean(records, scheme, split, "nltk_bleu_beam"), 2),
            format_mean_sd(_mean(records, scheme, split, "nltk_char_bleu_beam"), 2),
            "–" if ref is None else f"{100 * ref:.2f} (IWSLT2017)",
        ])
    return markdown_table(header, rows)


def _examples(ctx: ReportContext, schemes: list[str], seed: int) -> list[str]:
    """The same sources for every scheme: source, reference, then each scheme's beam output (one seed)."""
    by_index: dict[int, dict] = {}
    for scheme in schemes:
        path = ctx.result_path(TASK, scheme, seed) / "examples.jsonl"
        if not path.exists():
            continue
        for row in io.read_jsonl(path):
            entry = by_index.setdefault(row["index"], {"row": row, "outputs": {}})
            entry["outputs"][scheme] = row
    lines = []
    for index in sorted(by_index):
        first = by_index[index]["row"]
        lines += [
            f"**{first['split']} #{index}** — source: *{first['source']}*  ",
            f"reference: {first['reference']}",
            "",
            markdown_table(
                ["scheme", f"beam search (seed {seed})", "greedy"],
                [[f"`{s}`", _cell(out["beam"]) or "(empty)", _cell(out["greedy"]) or "(empty)"]
                 for s, out in by_index[index]["outputs"].items()],
            ),
            "",
        ]
    return lines


def _decode_cost(records: pd.DataFrame, schemes: list[str], split: str, sentences: dict) -> str:
    header = ["scheme", f"greedy, {sentences.get('greedy', '?')} sentences (s)",
              f"beam, {sentences.get('beam', '?')} sentences (s)"]
    rows = [[f"`{s}`"] + [f"{_mean(records, s, split, f'decode_time_s_{d}')['mean']:.1f}" for d in ("greedy", "beam")]
            for s in schemes]
    return markdown_table(header, rows)


def section(ctx: ReportContext) -> list[str]:
    """Markdown lines of the translation section (empty if there are no translation records); writes its
    figures into ``ctx.figures_dir``."""
    if not ctx.has_task(TASK):
        return []
    params, records, curves = ctx.params, ctx.records, ctx.curves
    cfg = ctx.cfg(TASK)
    schemes, seeds = list(params.schemes), list(params.seeds)
    results = ctx.result_path(TASK, schemes[0], seeds[0])
    meta_path = None if results is None else results / "eval_meta.json"
    meta = io.read_json(meta_path) if meta_path is not None and meta_path.exists() else {}
    splits = meta.get("eval_splits") or sorted(records[(records["task"] == TASK)
                                                       & records["split"].str.startswith("test")]["split"].unique())
    buckets = meta.get("length_buckets") or []
    first = splits[0]
    run_meta = ctx.run_meta(TASK, schemes[0], seeds[0])
    stats, vocab = run_meta["cost"], run_meta["info"].get("vocab_size", "?")

    figures = ctx.figures_dir
    draw_bleu_by_length(records, schemes, splits, buckets, figures / BLEU_BY_LENGTH)
    draw_curves(curves[curves["task"] == TASK], schemes, [("loss", "training loss (label-smoothed)"),
                                                     ("val_loss", "validation cross-entropy per token")],
                figures / LOSS)

    columns = [(first, "bleu_beam", f"BLEU {first}, beam"), (first, "chrf_beam", "chrF, beam"),
               (first, "bleu_greedy", "BLEU, greedy")]
    columns += [(s, "bleu_beam", f"BLEU {s}, beam") for s in splits[1:]]
    table, best = comparison_table(records, TASK, schemes, columns, digits=2, reference=params.reference)
    signatures = meta.get("signatures", {})
    sentences = meta.get("sentences", {}).get(first, {})
    m, t, d = cfg.model, cfg.train, cfg.eval.decode
    beam_scope = ("every sentence" if d.beam_sentences is None
                  else f"the first {d.beam_sentences} sentences of each test split (greedy: every sentence)")
    corpus = {"multi30k": "Multi30k task 1 (Elliott et al. 2016/2017)", "iwslt2017": "IWSLT 2017 fr-en (TED talks)"}
    lines = [
        "## Translation (French → English)",
        "",
        PROFILE_NOTES.get(params.profile, f"Profile **{params.profile}**."),
        "",
        f"Corpus: {corpus.get(cfg.data.corpus, cfg.data.corpus)}; training pairs with more than "
        f"{cfg.data.max_tokens} subword "
        f"tokens on either side are dropped"
        + (f", and so are those whose French source has more than {cfg.data.train_max_source_words} words "
           "(translation beyond its lengths: the BLEU-by-source-length figure shows the longer buckets the models "
           "never trained on)" if cfg.data.train_max_source_words is not None else "")
        + f"; test splits are scored whole ({', '.join(splits)}"
        + (" only: `translation.eval.splits` of this profile" if cfg.eval.splits is not None else "")
        + "). One joint French+English BPE vocabulary "
        f"of {vocab} tokens (HF `tokenizers`). Encoder-decoder: {m.encoder_layers}+{m.decoder_layers} pre-LN layers, "
        f"d = {m.d_model}, {m.n_heads} heads, FFN {m.d_ff}, dropout {m.dropout:g}. {t.steps} AdamW steps of "
        f"{t.batch_size} sentence pairs (≈ {stats.get('epochs', float('nan')):.1f} epochs), peak lr {t.lr:g}, "
        f"{t.warmup_steps} warmup steps then cosine decay, label smoothing {t.label_smoothing:g}; the last "
        f"checkpoint is evaluated. Decoding: greedy, and beam search (beam {d.beam_size}, length penalty "
        f"{d.length_penalty:g}) on {beam_scope}; at most ⌈{d.max_len_a:g}·|source| + {d.max_len_b}⌉ tokens.",
        "",
        *choices(ctx, TASK, cfg.data.max_tokens, cfg.data.max_tokens + 1),  # a target row: <s> + tokens
        "**Positions in the three attentions.** Encoder self-attention uses the scheme (bidirectional form), "
        "decoder self-attention a second instance in its causal form (own learned/T5 tables). Cross-attention "
        "uses no positional scheme: its queries (target positions) and keys (source positions) belong to different "
        "sequences, so a rotation or bias by their offset measures nothing. Absolute schemes still reach it, since "
        "they are added to both stacks' embeddings; RoPE, ALiBi and T5 act on self-attention only.",
        "",
        "### BLEU and chrF",
        "",
        "Headline: corpus sacreBLEU on detokenized, cased output against the raw references"
        + (f" (signature `{signatures['bleu']}`)" if "bleu" in signatures else "")
        + "; chrF" + (f" (`{signatures['chrf']}`)" if "chrf" in signatures else "") + ". Mean ± sd over "
        f"{len(seeds)} seeds with a 95% interval; the first column is compared with the reference scheme "
        f"`{params.reference}` (declared in params before the run): the paired difference with its t-interval, "
        "the exact "
        "sign-flip p over seeds (Holm-corrected across schemes) and the paired t-test p.",
        "",
        table,
        "",
        _reading(records, schemes, first, best, params.reference),
        "",
        f"All pairs, beam BLEU on {first} (row − column, mean paired difference over seeds [95% t-interval]):",
        "",
        difference_matrix(records, TASK, schemes, first, "bleu_beam", digits=2),
        "",
        ctx.image("BLEU by source length", BLEU_BY_LENGTH),
        "",
        ctx.image("translation loss curves", LOSS),
        "",
        *_paired_bootstrap(ctx, schemes, first),
        "### NLTK BLEU and the reference report",
        "",
        "The reference report scored with NLTK's `corpus_bleu` on raw strings. NLTK iterates a string "
        "character by character, so its “BLEU-4” counted character 1–4-grams: a much easier target than word "
        "BLEU, on a 0–1 scale, and on IWSLT2017 rather than Multi30k. Below, the same beam outputs scored three "
        f"ways on {first}: NLTK on 13a word tokens agrees with sacreBLEU (they differ only when an n-gram order "
        "has no match, where sacreBLEU smooths); NLTK on raw strings reproduces the reference's inflated "
        "character score. Only that column is of the same kind as the reference's numbers, and even it is on another "
        "corpus with another model.",
        "",
        _nltk_table(records, schemes, first),
        "",
        "### Example translations",
        "",
        "The same test sources for every scheme (indices fixed in `translation.eval.examples`).",
        "",
    ]
    if results is not None:
        lines += _examples(ctx, schemes, seeds[0])
    lines += [
        "### Cost",
        "",
        cost_table(records, TASK, schemes, {s: ctx.run_meta(TASK, s, seeds[0])["cost"]["device"] for s in schemes}),
        "",
        f"Decoding time per run on {first}:",
        "",
        _decode_cost(records, schemes, first, sentences),
        "",
        "### Baseline choices",
        "",
        "- Pre-LN layers (Xiong et al. 2020): stable without a long warmup at this depth.",
        "- Joint BPE and three-way tied embeddings (encoder input, decoder input, output projection; Press & Wolf "
        "2017): French and English share most subwords on Multi30k, and tying saves parameters on a small corpus.",
        f"- Label smoothing {t.label_smoothing:g} (Szegedy et al. 2016; Vaswani et al. 2017), dropout {m.dropout:g}.",
        f"- AdamW, β = (0.9, 0.98), weight decay {t.weight_decay:g} off biases, norms, embeddings and position "
        f"tables; gradient clipping {t.grad_clip:g}; linear warmup then cosine decay to zero.",
        "- Same seed → same batches, same dropout stream and same initial shared weights for every scheme; "
        "runs therefore pair by seed.",
        "- No checkpoint averaging, early stopping or ensembling: one number per run, the last checkpoint.",
        "",
    ]
    return lines


def draw_bleu_by_length(
    records: pd.DataFrame, schemes: list[str], splits: list[str], buckets: list[str], path: Path,
    metric: str = "bleu_beam",
) -> Path:
    """Corpus BLEU of each source-length bucket: mean over seeds ± sd, one line per scheme, a panel per split."""
    palette = scheme_palette()
    rows = records[(records["task"] == TASK) & (records["metric"] == metric) & records["length"].isin(buckets)]
    fig, axes = plt.subplots(1, len(splits), figsize=(5.5 * len(splits), 4), sharey=True, squeeze=False)
    for ax, split in zip(axes[0], splits):
        for offset, scheme in enumerate(schemes):
            sel = rows[(rows["pe"] == scheme) & (rows["split"] == split)]
            stats = sel.groupby("length")["value"].agg(["mean", "std"]).reindex(buckets)
            x = [i + 0.06 * (offset - (len(schemes) - 1) / 2) for i in range(len(buckets))]
            ax.errorbar(x, stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=4, capsize=3, lw=1.2,
                        label=scheme, color=palette[scheme])
        ax.set_xticks(range(len(buckets)), buckets)
        ax.set_xlabel("source length (French words)")
        ax.set_title(split, fontsize=10)
    axes[0][0].set_ylabel(f"sacreBLEU, {metric.split('_')[-1]} search (mean ± sd over seeds)")
    axes[0][-1].legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save(fig, path)


RESAMPLES = 1000  # sacreBLEU's default for --paired-bs


def read_lines(path: Path) -> list[str]:
    return Path(path).read_text().splitlines()


def paired_bootstrap(baseline: list[str], systems: dict[str, list[str]], references: list[str],
                     resamples: int = RESAMPLES) -> dict[str, dict[str, float]]:
    """{system: {"bleu", "baseline_bleu", "p"}}: sacreBLEU's paired bootstrap p of each system against the
    baseline on the same references (its fixed resampling seed, SACREBLEU_SEED=12345 by default)."""
    named = [("baseline", baseline), *systems.items()]
    test = PairedTest(named, {"BLEU": BLEU(references=[references])}, references=None, test_type="bs",
                      n_samples=resamples)
    _, scores = test()
    results = scores["BLEU"]
    base = results[0].score
    out = {}
    for name, r in zip(scores["System"][1:], results[1:]):
        # sacreBLEU counts resamples strictly beyond the observed difference, so identical outputs get
        # p = 1/(n+1) instead of 1; there is nothing to test then.
        p = 1.0 if systems[name] == baseline else (r.p_value if r.p_value is not None else math.nan)
        out[name] = {"bleu": r.score, "baseline_bleu": base, "p": p}
    return out
