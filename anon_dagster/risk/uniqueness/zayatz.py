"""Zayatz's model (1991), as ARX's ``ModelZayatz`` computes it.

The sample's class-size distribution stands in for the population's and ``P[population unique
| sample unique] = (c_1/u) H(1; N, 1, n) / sum_s (c_s/u) H(1; N, s, n)``, with ``H(1; N, s, n)``
the hypergeometric probability of drawing exactly one member of a class of size ``s`` in ``n``
draws from ``N``; ``U = c_1 P / f``.
"""

from __future__ import annotations

import numpy as np
from scipy import special


def _log_hypergeom_one(pop: np.ndarray, size: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """log H(1; N, s, n) = log(s C(N - s, n - 1) / C(N, n)), continuous in N."""
    gl = special.gammaln
    return (
        np.log(size)
        + gl(pop - size + 1) - gl(draws) - gl(pop - size - draws + 2)
        - (gl(pop + 1) - gl(draws + 1) - gl(pop - draws + 1))
    )


def _zayatz_uniques_batch(sizes: np.ndarray, counts: np.ndarray, f: float) -> np.ndarray:
    """Zayatz's ``U`` for each row of ``counts`` (a single sample is one row)."""
    counts = np.atleast_2d(counts).astype(float)
    n = counts @ sizes
    pop = n / f
    # Sizes above N - n + 1 cannot yield exactly one sampled member: their probability is 0.
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = _log_hypergeom_one(pop[:, None], sizes[None, :].astype(float), n[:, None])
    possible = sizes[None, :] <= (pop - n + 1.0)[:, None] + 1e-9
    logp = np.where(possible, logp, -np.inf)
    # Normalize by the largest term so that tiny probabilities do not underflow.
    shift = np.max(np.where(counts > 0, logp, -np.inf), axis=1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.where(counts > 0, counts * np.exp(logp - shift), 0.0)
    denom = weights.sum(axis=1)
    c1 = counts[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    first = weights[:, 0] if sizes[0] == 1 else np.zeros(len(counts))
    with np.errstate(invalid="ignore", divide="ignore"):
        cond = np.where(c1 > 0, first / denom, 0.0)
    return c1 * cond / f
