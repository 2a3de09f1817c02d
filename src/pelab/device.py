"""Device policy, one place for training and evaluation alike.

On CUDA: TF32 matmuls, bf16 autocast where the GPU computes bf16 natively (Ampere and later), else full fp32,
and pinned host batches. On the CPU everything stays fp32, so CPU runs are bit-reproducible.

No fp16: it needs a gradient scaler, and one scaler over a stack of seeds skips every seed's step when one seed
overflows (a scaler per seed would need a per-seed optimizer step); bf16 has fp32's exponent range and needs none.
"""

from __future__ import annotations

import os

import torch

from pelab.config import check_device


def pick_device(requested: str = "auto") -> torch.device:
    """``auto`` (CUDA when available, else CPU) | ``cpu`` | ``cuda`` | ``cuda:N``."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    check_device(requested)
    return torch.device(requested)


def prepare_device(device: torch.device) -> None:
    """Process-wide settings for ``device``: on CUDA it becomes the current device, TF32 matmuls and convolutions
    (the fp32 parts of mixed precision run on tensor cores; PyTorch's default keeps them in full fp32), and the
    cuBLAS workspace that deterministic algorithms need. Nothing changes for the CPU."""
    if device.type == "cuda":
        if device.index is not None:  # cuda:N becomes the current device, which CUDA graphs capture and replay on
            torch.cuda.set_device(device.index)  # (plain "cuda" is the current device already)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True


def use_deterministic_algorithms() -> None:
    """``torch.use_deterministic_algorithms(True, warn_only=True)`` without the import of ``torch._inductor`` that
    the public function makes to set inductor's own flag (training never compiles). Falls back to the public
    function where the private one is gone."""
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:
        torch.use_deterministic_algorithms(True, warn_only=True)
    else:
        set_flag(True, warn_only=True)


def amp_dtype(device: torch.device) -> torch.dtype | None:
    """The autocast dtype for ``device``: bf16 where the GPU supports it natively, else None (full fp32, TF32
    matmuls where the GPU has them), and None on the CPU."""
    if device.type != "cuda":
        return None
    try:
        native = torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # torch < 2.4: no emulation to rule out
        native = torch.cuda.is_bf16_supported()
    return torch.bfloat16 if native else None


def autocast(device: torch.device, cache: bool = True):
    """Mixed precision per ``amp_dtype``; a no-op on the CPU (keeps CPU runs bit-reproducible). ``cache`` False
    for a region a CUDA graph captures (autocast frees its cached casts on exit)."""
    dtype = amp_dtype(device)
    return torch.autocast(device_type=device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None,
                          cache_enabled=cache)


def precision(device: torch.device) -> str:
    """What a run on ``device`` computes in, as a run records it: ``cuda-bf16``, ``cuda-fp32``, ``cpu-fp32``."""
    dtype = amp_dtype(device)
    return f"{device.type}-{'bf16' if dtype == torch.bfloat16 else 'fp32'}"


def to_device(tensors: tuple[torch.Tensor, ...], device: torch.device) -> tuple[torch.Tensor, ...]:
    """Move a batch to ``device``; on CUDA through pinned host memory so that the copy is asynchronous."""
    if device.type == "cuda":
        return tuple(t.pin_memory().to(device, non_blocking=True) for t in tensors)
    return tuple(t.to(device) for t in tensors)


def device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
