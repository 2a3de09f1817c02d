"""The switches against attention dilution (``pelab.model.switches`` builds them), one record each: its name, its
reference and what it does. A scheme takes them as a spec's ``switches`` (``schemes.yaml``: ``rope_sink: {of: rope,
switches: [sink]}``): its positions, options and evaluation-time variants unchanged, the model's self-attention
switched. A new pairing is one entry there; a new switch one record here and its hook in ``model.switches``.
"""

from __future__ import annotations

# every switch (``pelab.model.switches`` builds them), in the order a scheme lists them, with its reference
SWITCHES: dict[str, str] = {
    "ssmax": "Nakanishi 2025, Scalable-Softmax Is Superior for Attention, https://arxiv.org/abs/2501.19399",
    "sink": "OpenAI 2025, gpt-oss (learned attention sinks), https://github.com/openai/gpt-oss",
    "gate": "Qiu et al. 2025, Gated Attention for Large Language Models, https://arxiv.org/abs/2505.06708",
}

_SAYS = {
    "ssmax": "SSMax: each query's logits scaled by s·log n (n the keys it sees, s learned per layer and head, from 0.43)",
    "sink": "a learned sink logit per head (a key with no value: the weights may sum to less than 1)",
    "gate": "a sigmoid output gate per head and channel, from the query's hidden state",
}


def check_switches(names: tuple[str, ...] | list[str], where: str) -> tuple[str, ...]:
    """``names`` in ``SWITCHES``' order; one line naming an unknown one and the valid switches."""
    unknown = [n for n in names if n not in SWITCHES]
    if unknown:
        raise ValueError(f"unknown switch(es) {unknown} in {where}; valid switches: {', '.join(SWITCHES)}")
    return tuple(n for n in SWITCHES if n in names)


def switches_sentence(names: tuple[str, ...]) -> str:
    """What ``names`` do and their references, for the sentence that states a switched scheme's setup."""
    return f"{'; '.join(_SAYS[s] for s in names)} ({'; '.join(SWITCHES[s] for s in names)})"
