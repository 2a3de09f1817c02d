"""Decoding throughput (sentences/s) of the translation model: greedy and beam search, batched on the device.

    python benchmarks/bench_decode.py [--device cpu|cuda] [--size quick|full] [--sentences N] [--smoke] [--out FILE]

The model is the profile's encoder-decoder (``--size``) trained for a few hundred steps on a synthetic
reversal-free "copy the source" language (source and target are the same random ids), so that it emits
``</s>`` at plausible lengths instead of always running to the length limit, as an untrained model would.
Sources are random ids of 8–24 tokens (Multi30k's range). Decoding uses ``translate``, the function the
evaluation stage calls, with the profile's beam size and batch size. ``--smoke`` is a CI-sized check.
"""

from __future__ import annotations

import click
import torch
from _common import device_name, wall_s, write_results

from pelab.config import TrainConfig
from pelab.positional import scheme_options
from pelab.tasks.translation.config import DecodeConfig, Seq2SeqConfig
from pelab.tasks.translation.data import EOS_ID, pad_sequences
from pelab.tasks.translation.decoding import translate
from pelab.tasks.translation.model import build_seq2seq_model
from pelab.tasks.translation.task import make_loss
from pelab.training.loop import train

SIZES = {
    "smoke": dict(d=16, layers=1, heads=2, ff=32, vocab=40, beam=2, batch=64, steps=5),
    "quick": dict(d=64, layers=2, heads=4, ff=256, vocab=2000, beam=4, batch=512, steps=300),
    "full": dict(d=512, layers=3, heads=8, ff=2048, vocab=8000, beam=5, batch=640, steps=300),
}


def sources(n: int, vocab: int, seed: int) -> list[list[int]]:
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(8, 25, (n,), generator=gen).tolist()
    return [[*torch.randint(4, vocab, (k - 1,), generator=gen).tolist(), EOS_ID] for k in lengths]


def copy_model(size: dict, device: torch.device) -> torch.nn.Module:
    cfg = Seq2SeqConfig(d_model=size["d"], encoder_layers=size["layers"], decoder_layers=size["layers"],
                        n_heads=size["heads"], d_ff=size["ff"], dropout=0.0)
    model = build_seq2seq_model("sinusoidal", size["vocab"], cfg, scheme_options("sinusoidal"), seed=0)
    gen = torch.Generator().manual_seed(1)

    def next_batch(step: int):
        batch = sources(64, size["vocab"], int(torch.randint(0, 2**31, (1,), generator=gen)))
        src = pad_sequences(batch)
        tgt = pad_sequences([[1, *s] for s in batch])  # <s> + the source + </s>
        return src, tgt[:, :-1], tgt[:, 1:]

    train([model], [next_batch], make_loss(0.0), TrainConfig(steps=size["steps"], batch_size=64, lr=1e-3,
          warmup_steps=30, log_every=max(1, size["steps"])), device, desc="fit the copy model")
    return model


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--size", type=click.Choice(["quick", "full"]), default="quick", show_default=True)
@click.option("--sentences", default=1000, show_default=True)
@click.option("--smoke", is_flag=True, help="tiny model, 20 sentences: checks the script runs (CI)")
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device: str, size: str, sentences: int, smoke: bool, out: str | None) -> None:
    dev = torch.device(device)
    if smoke:
        size, sentences = "smoke", 20
    s = SIZES[size]
    model = copy_model(s, dev).to(dev)
    src = sources(sentences, s["vocab"], seed=7)
    results = {"device": device_name(dev),
               "threads": torch.get_num_threads(), "torch": torch.__version__, "size": size, "config": s,
               "sentences": sentences}
    for name, beam in (("greedy", 1), ("beam", s["beam"])):
        cfg = DecodeConfig(beam_size=beam, batch_size=s["batch"])
        translate(model, src[: min(64, sentences)], cfg, beam_size=beam)  # warm-up
        hyps: list[list[int]] = []
        seconds = wall_s(lambda: hyps.extend(translate(model, src, cfg, beam_size=beam)), dev)
        exact = sum(h == x[:-1] for h, x in zip(hyps, src)) / len(src)
        results[name] = {"beam_size": beam, "seconds": seconds, "sentences_per_s": sentences / seconds,
                         "copied_exactly": exact}
        click.echo(f"{name:6s} (beam {beam}) {sentences / seconds:9.1f} sentences/s  ({seconds:.2f} s for "
                   f"{sentences}; {exact:.0%} copied exactly)")
    write_results(out, results)


if __name__ == "__main__":
    main()
