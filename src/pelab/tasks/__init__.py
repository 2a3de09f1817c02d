"""Tasks: data generation/loading and their metrics."""
