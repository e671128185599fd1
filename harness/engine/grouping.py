"""Rows grouped by small int keys, in bulk (numpy): what a run's summary groups its requests by
(tenant, window) with, where a mask over every row per group cost a pass per group."""

from __future__ import annotations

import numpy as np

__all__ = ["grouped", "pair_counts"]


def grouped(keys: np.ndarray, groups: int) -> tuple[np.ndarray, list[int]]:
    """The order that sorts `keys` (ints in [0, groups)) stably, and where each group starts in
    it: group g is `order[bounds[g]:bounds[g + 1]]`, in its original order."""
    order = np.argsort(keys, kind="stable")
    return order, np.searchsorted(keys[order], np.arange(groups + 1)).tolist()


def pair_counts(rows: np.ndarray, cols: np.ndarray, n_rows: int, n_cols: int) -> np.ndarray:
    """How often each (row, col) pair occurs, as an n_rows x n_cols table (one bincount)."""
    return np.bincount(rows.astype(np.int64) * n_cols + cols, minlength=n_rows * n_cols).reshape(n_rows, n_cols)
