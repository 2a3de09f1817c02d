"""Numerical analyses the report states, as pure functions on tensors and frames (no files, no figures): the
references' properties of positional encodings (linear shift, constant norm, relative-only scores, distance
decay), the geometry of learned position tables, attention summaries, rankings across tasks and sacreBLEU's paired
bootstrap. Checked on known inputs by ``tests/test_analysis.py``; the report's sections call them and draw."""
