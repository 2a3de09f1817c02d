"""The learned position table: its trajectory during training (PCA of its rows at saved checkpoints,
the copy-task post's "learned-20d-pca.gif") and a 2-D MDS map of the trained table (translation report)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.decomposition import PCA
from sklearn.manifold import MDS

TABLE_KEY = "table.weight"  # name of the learned table among the scheme's parameters


@dataclass(frozen=True)
class Snapshots:
    steps: list[int]
    tables: torch.Tensor  # (S, P, D), float64


def load_snapshots(path: str | Path, rows: int | None = None) -> Snapshots:
    """``position_snapshots.pt``: [(step, {"table.weight": (P, D)}), …] -> steps and the first ``rows`` rows."""
    raw = torch.load(Path(path), weights_only=True)
    steps = [int(step) for step, _ in raw]
    tables = torch.stack([state[TABLE_KEY][:rows].double() for _, state in raw])  # (S, P, D)
    return Snapshots(steps, tables)


@dataclass(frozen=True)
class PCATrajectory:
    steps: list[int]
    coords: np.ndarray  # (S, P, 2): every snapshot projected on the trained table's first two components
    explained: np.ndarray  # (2,): variance ratio of those components in the trained table


def pca_trajectory(snapshots: Snapshots) -> PCATrajectory:
    """Fit a 2-component PCA on the last (trained) table and project every snapshot onto it, so all
    frames share axes and the motion of each position during training is visible."""
    tables = snapshots.tables.numpy()
    pca = PCA(n_components=2).fit(tables[-1])
    coords = np.stack([pca.transform(t) for t in tables])  # (S, P, 2)
    return PCATrajectory(snapshots.steps, coords, pca.explained_variance_ratio_)


def pairwise_distances(table: torch.Tensor) -> np.ndarray:
    """Euclidean distances between rows: (P, D) -> (P, P)."""
    return torch.cdist(table.double(), table.double()).numpy()


def _metric_mds(seed: int) -> MDS:
    """Metric MDS on precomputed distances; scikit-learn 1.8 renamed the arguments."""
    if "metric_mds" in MDS().get_params():
        return MDS(n_components=2, metric="precomputed", init="classical_mds", random_state=seed)
    return MDS(n_components=2, dissimilarity="precomputed", n_init=4, random_state=seed)


def mds_2d(table: torch.Tensor, seed: int = 0) -> tuple[np.ndarray, float]:
    """Metric MDS of the rows into 2-D: (P, 2) and Kruskal's stress-1 of the embedding
    (√(Σ(‖y_i − y_j‖ − d_ij)² / Σ d_ij²): 0 is a perfect 2-D picture, above ~0.2 a poor one)."""
    distances = pairwise_distances(table)
    coords = _metric_mds(seed).fit_transform(distances)
    embedded = np.linalg.norm(coords[:, None] - coords[None], axis=-1)
    stress = np.sqrt(((embedded - distances) ** 2).sum() / (distances**2).sum())
    return coords, float(stress)


def adjacent_nearest_neighbours(table: torch.Tensor) -> float:
    """Fraction of positions whose nearest other row is a neighbouring position (i ± 1).

    1 when the rows lie in order along a curve (even a closed one, where the distance-offset correlation
    is low); about 2/(P − 1) for a random table.
    """
    distances = pairwise_distances(table)
    np.fill_diagonal(distances, np.inf)
    nearest = distances.argmin(axis=1)
    return float((np.abs(nearest - np.arange(len(nearest))) == 1).mean())


def distance_offset_correlation(table: torch.Tensor) -> float:
    """Spearman ρ between |i − j| and ‖PE(i) − PE(j)‖ over pairs i < j: near 1 when nearby positions
    have nearby vectors (the translation report's reading of its MDS map), near 0 for a random table."""
    distances = pairwise_distances(table)
    i, j = np.triu_indices(distances.shape[0], k=1)
    return float(spearmanr(j - i, distances[i, j]).statistic)


def offset_distance_curve(table: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """‖PE(i) − PE(j)‖ by offset |i − j| = 1..P−1: offsets, and the mean, min and max over pairs."""
    distances = pairwise_distances(table)
    offsets = np.arange(1, distances.shape[0])
    diagonals = [np.diagonal(distances, int(d)) for d in offsets]
    return (offsets, np.array([d.mean() for d in diagonals]), np.array([d.min() for d in diagonals]),
            np.array([d.max() for d in diagonals]))
