"""Numerical analyses the report states, as pure functions on tensors and frames (no files, no figures): the
references' properties of positional encodings (linear shift, constant norm, relative-only scores, distance
decay), the geometry of learned position tables, attention summaries, the probe's diagnostics over seeds, rankings
across tasks, evaluation-time variants as pseudo-schemes and sacreBLEU's paired bootstrap; and what a scheme states
about itself (``schemes``). Checked on known inputs by ``tests/test_analysis.py`` and ``tests/test_describe.py``;
the report's sections call them and draw."""
