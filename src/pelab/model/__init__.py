"""Transformer building blocks shared by every task; positional schemes enter only via the PE interface."""
