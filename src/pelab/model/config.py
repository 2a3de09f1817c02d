"""The config of the encoder-only models (copy task, length study): pre-LN layers of self-attention and FFN."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelConfig:
    """The encoder: pre-LN layers of self-attention and FFN."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_ff: int = 256
    dropout: float = 0.0

    def __post_init__(self) -> None:
        if self.n_layers < 1 or self.n_heads < 1 or self.d_model < 1 or self.d_ff < 1:
            raise ValueError(
                f"model sizes must be >= 1, got d_model={self.d_model}, n_layers={self.n_layers}, "
                f"n_heads={self.n_heads}, d_ff={self.d_ff}"
            )
        if self.d_model % self.n_heads:
            raise ValueError(
                f"model.d_model={self.d_model} is not divisible by model.n_heads={self.n_heads}; "
                "choose n_heads that divides d_model"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"model.dropout must be in [0, 1), got {self.dropout}")
