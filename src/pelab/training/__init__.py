"""Training: the one loop, seeds stacked with vmap, CUDA graphs, cost accounting."""
