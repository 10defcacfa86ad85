"""Butcher tableaus of the built-in explicit Runge–Kutta methods."""

from typing import NamedTuple

import numpy as np


class ButcherTableau(NamedTuple):
    """Explicit RK coefficients: stage matrix `a` (strictly lower triangular), weights `b`, nodes `c`."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray

    @classmethod
    def make(cls, a, b, c) -> "ButcherTableau":
        a = np.asarray(a, dtype=np.float64)
        b = np.asarray(b, dtype=np.float64)
        c = np.asarray(c, dtype=np.float64)
        s = b.shape[0]
        if a.shape != (s, s) or c.shape != (s,) or np.any(np.triu(a) != 0):
            raise ValueError("ButcherTableau: a must be strictly lower triangular (s, s) with b, c of length s")
        if not np.isclose(b.sum(), 1.0) or not np.allclose(a.sum(axis=1), c):
            raise ValueError("ButcherTableau: weights must sum to 1 and rows of a must sum to c")
        return cls(a, b, c)


EULER = ButcherTableau.make([[0.0]], [1.0], [0.0])
MIDPOINT = ButcherTableau.make([[0, 0], [0.5, 0]], [0, 1], [0, 0.5])
HEUN = ButcherTableau.make([[0, 0], [1, 0]], [0.5, 0.5], [0, 1])
RK4 = ButcherTableau.make(
    [[0, 0, 0, 0], [0.5, 0, 0, 0], [0, 0.5, 0, 0], [0, 0, 1, 0]],
    [1 / 6, 1 / 3, 1 / 3, 1 / 6],
    [0, 0.5, 0.5, 1],
)
