"""Loaded by Hydra's plugin scan when DVC composes params.yaml (`dvc exp run -S ...`; DVC looks for plugins in the
repository's root): registers pelab's OmegaConf resolvers, which conf/config.yaml reads (``pelab.compose``)."""

from pelab.compose import register_resolvers

register_resolvers()
