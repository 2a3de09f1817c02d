"""Speed of each positional scheme, measured side by side in one run and printed as ratios.

    python benchmarks/bench_positional.py [--device cpu|cuda] [--d-model 128] [--seq 128] [--batch 32]

Prints, per scheme, the median time of a training step (forward + backward) of the copy model and
its ratio to `none`; then the fast elementwise RoPE against the explicit block-matrix form, and the
fused SDPA path against explicit attention (the path used for attention maps). Results go to stdout
and, with --out, to a JSON file (benchmarks/results/ keeps the ones we recorded).
"""

from __future__ import annotations

import statistics

import click
import torch
import torch.nn.functional as F
from _common import device_name, wall_s, write_results

from pelab.device import autocast
from pelab.positional import scheme_names, scheme_options
from pelab.positional.functional import rope_angles, rope_rotate, rope_rotation_matrices
from pelab.tasks.copy.config import ModelConfig
from pelab.tasks.copy.model import build_copy_model


def _options(scheme: str, seq: int):
    """Default options; the learned table sized to the benchmark's length."""
    return scheme_options(scheme, {"max_positions": max(seq, 128)} if scheme == "learned" else None)  # rand_*: 512


def timed(fn, device: torch.device, repeats: int, warmup: int = 3) -> float:
    """Median wall time of ``fn()`` in milliseconds."""
    for _ in range(warmup):
        fn()
    return statistics.median(wall_s(fn, device) * 1000 for _ in range(repeats))


@click.command()
@click.option("--device", default="cuda" if torch.cuda.is_available() else "cpu", show_default=True)
@click.option("--d-model", default=128, show_default=True)
@click.option("--heads", default=4, show_default=True)
@click.option("--layers", default=2, show_default=True)
@click.option("--seq", default=128, show_default=True)
@click.option("--batch", default=32, show_default=True)
@click.option("--repeats", default=20, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), default=None)
def main(device, d_model, heads, layers, seq, batch, repeats, out):
    dev = torch.device(device)
    model_cfg = ModelConfig(d_model=d_model, n_layers=layers, n_heads=heads, d_ff=4 * d_model)
    vocab = 12
    tokens = torch.randint(0, vocab, (batch, seq), device=dev)
    results: dict = {"device": device_name(dev),
                     "threads": torch.get_num_threads(), "shape": {"batch": batch, "seq": seq, "d_model": d_model,
                     "heads": heads, "layers": layers}, "train_step_ms": {}}

    # 1. one training step per scheme, interleaved round-robin so drift hits every scheme alike
    # the copy model is bidirectional; xpos and mamba (no attention) are causal only
    schemes = [s for s in scheme_names() if s not in ("xpos", "mamba")]
    models = {s: build_copy_model(s, vocab, model_cfg, _options(s, seq), seed=0).to(dev) for s in schemes}

    def step(model):
        def run():
            with autocast(dev):
                logits, _ = model(tokens)
                loss = F.cross_entropy(logits.flatten(0, 1).float(), tokens.flatten())
            loss.backward()
        return run

    samples = {s: [] for s in models}
    for _ in range(3):
        for scheme, model in models.items():
            samples[scheme].append(timed(step(model), dev, max(1, repeats // 3)))
    base = statistics.median(samples["none"])
    click.echo(f"device={results['device']} threads={results['threads']} batch={batch} seq={seq} d={d_model}")
    click.echo(f"{'scheme':12s} {'step ms':>9s} {'× none':>7s}")
    for scheme in models:
        ms = statistics.median(samples[scheme])
        results["train_step_ms"][scheme] = ms
        click.echo(f"{scheme:12s} {ms:9.2f} {ms / base:7.2f}")

    # 2. RoPE: fast elementwise form vs explicit block-rotation matrices
    head_dim = d_model // heads
    x = torch.randn(batch, heads, seq, head_dim, device=dev)
    angles = rope_angles(torch.arange(seq, device=dev), head_dim)
    mats = rope_rotation_matrices(angles)  # (T, Dh, Dh)
    fast = timed(lambda: rope_rotate(x, angles), dev, repeats)
    slow = timed(lambda: torch.einsum("tij,bhtj->bhti", mats, x), dev, repeats)
    results["rope_fast_ms"], results["rope_matrix_ms"] = fast, slow
    click.echo(f"rope elementwise {fast:.3f} ms vs block-matrix {slow:.3f} ms: matrix/elementwise = {slow / fast:.2f}")

    # 3. fused SDPA vs explicit attention (need_weights=True) in the forward pass, per scheme
    results["forward_sdpa_vs_explicit"] = {}
    with torch.no_grad():
        for scheme in ("none", "rope", "alibi", "t5"):
            model = models[scheme].eval()
            fused = timed(lambda: model(tokens), dev, repeats)
            explicit = timed(lambda: model(tokens, need_weights=True), dev, repeats)
            results["forward_sdpa_vs_explicit"][scheme] = explicit / fused
            click.echo(f"forward {scheme:10s} explicit/SDPA = {explicit / fused:.2f} ({fused:.2f} ms fused)")
    write_results(out, results)


if __name__ == "__main__":
    main()
