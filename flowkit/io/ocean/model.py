"""One row of the table of models (`flowkit.io.ocean.MODELS`)."""

import dataclasses
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Model:
    """An ocean or atmosphere model's output and how it is read.

    - `name`: what messages and the log call it.
    - `detect(datasets) -> bool`: whether the lazily opened datasets (one per file) are this
      model's output, by the files' own conventions (their dimensions, variables, attributes).
    - `build(datasets, **options) -> field`: the field of those datasets.
    - `options`: the keyword options of `fk.io.from_xarray` that `build` takes; any other one a
      user gives is refused, naming the model.
    """

    name: str
    detect: Callable[[list], bool]
    build: Callable[..., Any]
    options: frozenset[str]
