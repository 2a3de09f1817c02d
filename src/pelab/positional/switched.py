"""A scheme with switches against attention dilution (``pelab.model.switches``): the scheme's positions unchanged,
the model's self-attention switched. ``rope_ssmax``, ``rope_sink`` and ``rope_gate`` (a module each) put each
switch beside plain ``rope`` in the LM study; another pair is one module of one line, as they are.
"""

from __future__ import annotations

from pelab.positional.base import PositionalEncoding, Usage

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


def with_switches(name: str, scheme: type[PositionalEncoding], *switches: str) -> type[PositionalEncoding]:
    """The scheme ``name``: ``scheme`` (its options, positions and variants) with ``switches`` in every self-attention
    layer of the model that uses it."""
    names = check_switches(switches, name)
    title = "".join(part.title() for part in name.split("_"))  # rope_ssmax -> RopeSsmax

    def describe(self: PositionalEncoding, usage: Usage) -> str:
        own = scheme.describe(self, usage)
        says = "; ".join(_SAYS[s] for s in names)
        return f"{own.rstrip('.') + '; ' if own else ''}{says} ({'; '.join(SWITCHES[s] for s in names)})."

    # read as trained and with the temperature: the extension menu reads the scheme itself (the suite's time)
    return type(f"{title}PositionalEncoding", (scheme,), {
        "switches": names, "describe": describe, "variants": "", "__module__": f"pelab.positional.{name}",
        "__doc__": f"``{name}``: ``{scheme.__name__}`` with {' and '.join(names)} (``pelab.model.switches``)."})
