"""pelab — Positional Encoding Lab: a fair, reproducible comparison of positional encodings."""

__version__ = "0.1.0"
