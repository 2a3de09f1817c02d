"""Train-step throughput of pelab's models against x-transformers (https://github.com/lucidrains/x-transformers,
the library researchers reach for), on the same configuration, measured side by side in one run.

    python benchmarks/bench_xtransformers.py [--device cpu|cuda] [--smoke] [--out FILE]

Configurations (issue "The whole study in minutes"): the copy encoder (d=128, 2 layers, 4 heads, FFN 512) and the
translation encoder-decoder (d=512, 3+3 layers, 8 heads, FFN 2048), each with sinusoidal, rope, alibi and t5.
A step is forward, cross-entropy, backward and an AdamW update, on the same token batch for both libraries;
the two are interleaved round-robin so drift hits both alike, and the median of each is compared:
``x/pelab`` > 1 means pelab is faster. ``--smoke`` shrinks everything to a CI-sized check that it runs.

Differences that remain (stated, not hidden): x-transformers' sinusoidal is its ScaledSinusoidalEmbedding (one
learned scale), and its T5 bias uses its own bucketing defaults; pelab's models add nothing else per scheme.
"""

from __future__ import annotations

import statistics

import click
import torch
import torch.nn.functional as F
from _common import device_name, wall_s, write_results

from pelab.device import autocast
from pelab.positional import scheme_options
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import build_copy_model
from pelab.tasks.translation.config import Seq2SeqConfig
from pelab.tasks.translation.model import build_seq2seq_model

SCHEMES = ("sinusoidal", "rope", "alibi", "t5")


def x_flags(scheme: str) -> tuple[dict, dict]:
    """(attention-layer flags, wrapper flags) of x-transformers for a pelab scheme."""
    layers = {"rope": {"rotary_pos_emb": True}, "alibi": {"alibi_pos_bias": True},
              "t5": {"rel_pos_bias": True}}.get(scheme, {})
    wrapper = {"scaled_sinu_pos_emb": True} if scheme == "sinusoidal" else {"use_abs_pos_emb": False}
    return layers, wrapper


def x_encoder(scheme: str, vocab: int, seq: int, d: int, layers: int, heads: int):
    from x_transformers import Encoder, TransformerWrapper

    attn, wrapper = x_flags(scheme)
    return TransformerWrapper(num_tokens=vocab, max_seq_len=seq,
                              attn_layers=Encoder(dim=d, depth=layers, heads=heads, ff_mult=4, **attn), **wrapper)


def x_seq2seq(scheme: str, vocab: int, seq: int, d: int, layers: int, heads: int):
    from x_transformers import XTransformer

    attn, wrapper = x_flags(scheme)
    kwargs = {f"{side}_{k}": v for side in ("enc", "dec") for k, v in {**attn, **wrapper}.items()}
    return XTransformer(dim=d, enc_num_tokens=vocab, enc_depth=layers, enc_heads=heads, enc_max_seq_len=seq,
                        dec_num_tokens=vocab, dec_depth=layers, dec_heads=heads, dec_max_seq_len=seq,
                        enc_ff_mult=4, dec_ff_mult=4, **kwargs)


def timed(fn, device: torch.device, repeats: int) -> list[float]:
    return [wall_s(fn, device) * 1000 for _ in range(repeats)]


def train_step(model, optimizer, forward, target, device):
    def run():
        with autocast(device):
            logits = forward(model)
            loss = F.cross_entropy(logits.flatten(0, 1).float(), target.flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return run


def compare(name: str, builders: dict, forward: dict, target, device, repeats: int, rounds: int = 3) -> dict:
    """builders[lib]() -> model; forward[lib](model) -> logits. Median step ms per library and the ratio."""
    steps = {}
    for lib, build in builders.items():
        model = build().to(device)
        steps[lib] = train_step(model, torch.optim.AdamW(model.parameters(), lr=1e-3), forward[lib], target, device)
        timed(steps[lib], device, 2)  # warm-up
    samples = {lib: [] for lib in steps}
    for _ in range(rounds):
        for lib, step in steps.items():
            samples[lib] += timed(step, device, repeats)
    ms = {lib: statistics.median(v) for lib, v in samples.items()}
    return {"pelab_ms": ms["pelab"], "x_transformers_ms": ms["x"], "x_over_pelab": ms["x"] / ms["pelab"]}


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--smoke", is_flag=True, help="tiny sizes and 1 repeat: checks the script runs (CI)")
@click.option("--repeats", default=5, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, smoke: bool, repeats: int, out: str | None) -> None:
    dev = torch.device(device)
    torch.manual_seed(0)
    copy_cfg = dict(d=16, layers=1, heads=2, seq=12, batch=4, vocab=12) if smoke else \
        dict(d=128, layers=2, heads=4, seq=40, batch=64, vocab=12)
    mt_cfg = dict(d=16, layers=1, heads=2, seq=10, batch=2, vocab=50) if smoke else \
        dict(d=512, layers=3, heads=8, seq=32, batch=32, vocab=8000)
    repeats = 1 if smoke else repeats
    from importlib.metadata import version

    results = {"device": device_name(dev),
               "threads": torch.get_num_threads(), "torch": torch.__version__,
               "x_transformers": version("x-transformers"), "copy": {}, "translation": {},
               "copy_config": copy_cfg, "translation_config": mt_cfg}
    click.echo(f"device={results['device']} threads={results['threads']} torch={torch.__version__}")

    c = copy_cfg
    tokens = torch.randint(0, c["vocab"], (c["batch"], c["seq"]), device=dev)
    for scheme in SCHEMES:
        pelab_cfg = ModelConfig(d_model=c["d"], n_layers=c["layers"], n_heads=c["heads"], d_ff=4 * c["d"])
        builders = {"pelab": lambda s=scheme, p=pelab_cfg: build_copy_model(s, c["vocab"], p, scheme_options(s), seed=0),
                    "x": lambda s=scheme: x_encoder(s, c["vocab"], c["seq"], c["d"], c["layers"], c["heads"])}
        forward = {"pelab": lambda m: m(tokens)[0], "x": lambda m: m(tokens)}
        results["copy"][scheme] = r = compare("copy", builders, forward, tokens, dev, repeats)
        click.echo(f"copy encoder  {scheme:10s} pelab {r['pelab_ms']:8.2f} ms  x-transformers "
                   f"{r['x_transformers_ms']:8.2f} ms  x/pelab {r['x_over_pelab']:.2f}")

    m = mt_cfg
    src = torch.randint(4, m["vocab"], (m["batch"], m["seq"]), device=dev)
    tgt = torch.randint(4, m["vocab"], (m["batch"], m["seq"]), device=dev)
    for scheme in SCHEMES:
        cfg = Seq2SeqConfig(d_model=m["d"], encoder_layers=m["layers"], decoder_layers=m["layers"],
                            n_heads=m["heads"], d_ff=4 * m["d"], dropout=0.0)
        builders = {"pelab": lambda s=scheme, c=cfg: build_seq2seq_model(s, m["vocab"], c, scheme_options(s), seed=0),
                    "x": lambda s=scheme: x_seq2seq(s, m["vocab"], m["seq"], m["d"], m["layers"], m["heads"])}
        forward = {"pelab": lambda model: model(src, tgt), "x": lambda model: x_logits(model, src, tgt)}
        results["translation"][scheme] = r = compare("translation", builders, forward, tgt, dev, repeats)
        click.echo(f"translation   {scheme:10s} pelab {r['pelab_ms']:8.2f} ms  x-transformers "
                   f"{r['x_transformers_ms']:8.2f} ms  x/pelab {r['x_over_pelab']:.2f}")
    write_results(out, results)


def x_logits(model, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Teacher-forced decoder logits of an XTransformer (its forward returns a loss, not logits)."""
    encoded = model.encoder(src, return_embeddings=True)
    return model.decoder.net(tgt, context=encoded)


if __name__ == "__main__":
    main()
