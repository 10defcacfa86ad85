"""Shared jaxtyping aliases."""

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from jaxtyping import Array, ArrayLike, Float, Int, Real

Position = Float[Array, " dim"]
Positions = Float[Array, "n dim"]
Velocity = Float[Array, " dim"]
TimeLike = Real[ArrayLike, ""]
Bounds = tuple[Float[Array, " dim"], Float[Array, " dim"]]
StatusCode = Int[Array, ""]
Args = Any
ScalarLike = Real[ArrayLike, ""]
PathLike = str | os.PathLike
Files = PathLike | Sequence[PathLike]
"""A file, a glob pattern or a list of files (a series along time)."""
TimesLike = ArrayLike | Sequence[float]
"""Times a user gives: a sequence or an array of seconds."""
HostOrDevice = Array | np.ndarray
"""An array on the host (NumPy, before a run) or on the device: for set-up code that takes either."""
Param = Real[ArrayLike, "..."] | Sequence[ArrayLike]
"""A physical parameter: a number, or an array of them (one per member of an ensemble)."""
PointsLike = ArrayLike | Sequence[ArrayLike | Sequence[ArrayLike]]
"""A point or points as a user gives them: an array, or (nested) lists of coordinates."""
BoundsLike = PointsLike
"""`(lo, hi)` as a user gives it: two corners, each a sequence or array of coordinates."""
Counts = ArrayLike | Sequence[int]
"""A count per axis (`(64, 32)`), or one for every axis."""
ArrayInput = ArrayLike | Sequence[Any]
"""An array as a user gives it: NumPy or JAX, or (nested) sequences of numbers."""
PeriodicLike = ArrayLike | Sequence[bool | float]
"""Per axis (or one for all) `True`, `False` or the period."""
