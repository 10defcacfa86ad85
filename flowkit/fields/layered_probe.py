"""The ocean probe (`flowkit.native`, `ocean_chunk.cc`'s `Probe`): a layered field's values at
the rows of one evaluation of the JAX step (a Runge–Kutta stage, a step's end), by the ocean
kernel's own location and interpolation, in one compiled call.

XLA's CPU backend runs a layered field's location (a walk across the surface mesh in a
`while_loop`) and its gathers of node columns 20-25 times slower than the ocean kernel does
them; the rest of a step (the integrator, the particle model, the boundary, the statuses) it
runs at the kernel's pace. So where the fused kernel does not take a run's steps (particle
models, forcing samples, diffusivities that vary) the JAX step keeps all of its rules and calls
the probe for the field's part alone: each row located from its hint, its velocity in m/s at
the time asked (the JAX step converts it to degrees), the sea floor below the surface there and
the cell's interpolated land mask. `LayeredField` calls it where its `engine` is on (the
tracker turns it on for runs on CPUs with the kernels built: `flowkit.tracker.engine`).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int32

from ..native import interface
from . import cells
from .base import Hints


class ProbeInputs(NamedTuple):
    """The probe's input buffers (`ocean_chunk.cc`, `FLOWKIT_PROBE_INPUTS`): the rows and their
    hints, the time, then the surface mesh's tables and the columns (as the ocean kernel's)."""

    x: Float[Array, "n dim"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 2"]
    coords: Float[Array, "n 2"]
    time: Float[Array, " 1"]
    affine_map: Float[Array, "cells map"]
    convex: Int32[Array, " cells"]
    nodes: Int32[Array, "cells corners"]
    kind_of_cell: Int32[Array, " cells_or_none"]
    kind_code: Int32[Array, " kinds"]
    neighbours: Int32[Array, "cells faces"]
    bin_origin: Float[Array, " 2"]
    bin_inv_size: Float[Array, " 2"]
    bin_shape: Int32[Array, " 2"]
    bin_start: Int32[Array, " bins_and_one"]
    bin_cells: Int32[Array, " entries"]
    depths: Float[Array, "T P K"]
    velocities: Float[Array, "T R 3"]
    floor: Float[Array, "T P 1"]
    times: Float[Array, " T_or_none"]
    land: Float[Array, " P_or_none"]


class ProbeResults(NamedTuple):
    """What the probe returns per row: the velocity (m/s; 0 for `SKIP`ped rows and without
    `values`), the hint that locates the row, whether it lies on the mesh, the sea floor below
    the surface there (without `values`: 0) and the cell's interpolated land mask (0 without one)."""

    velocity: Float[Array, "n dim"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 2"]
    coords: Float[Array, "n 2"]
    found: Int32[Array, " n"]
    floor: Float[Array, " n"]
    land: Float[Array, " n"]


class ProbeAttrs(NamedTuple):
    newton_steps: int
    walk_steps: int
    tolerance: float
    values: int
    """1: the velocity and the floor too; 0: the location and the land mask alone."""


PROBE = interface.Interface(
    name="ocean_probe",
    inputs=ProbeInputs,
    results=ProbeResults,
    attrs=ProbeAttrs,
    kinds={name: cells.KINDS[name].nodes for name in ("triangle", "quad")},
    capacity={"map_columns": 2 + 2 * 2 + cells.box_columns(2)},
)
"""The probe as Python declares and calls it."""


def column_tables(field, dtype) -> dict[str, Array]:
    """A layered `field`'s surface mesh and columns as the ocean kernel and the probe read them
    (their inputs from `affine_map` to `land`), by name; absent tables empty buffers."""
    surface = field.surface
    none = lambda kind=jnp.int32: jnp.zeros(0, kind)  # noqa: E731
    return dict(
        affine_map=surface.affine_map,
        convex=field.convex_cells,
        nodes=surface.nodes,
        kind_of_cell=surface.kind_of_cell if surface.kind_of_cell is not None else none(),
        kind_code=jnp.asarray([interface.code(PROBE, "kinds", k) for k in surface.kinds], jnp.int32),
        neighbours=surface.neighbours,
        bin_origin=surface.bin_origin,
        bin_inv_size=surface.bin_inv_size,
        bin_shape=jnp.asarray(surface.bin_shape, jnp.int32),
        bin_start=surface.bin_start,
        bin_cells=surface.bin_cells,
        depths=field.depths,
        velocities=field.velocities,
        floor=field.floor,
        times=field.times if field.times is not None else none(dtype),
        land=field.land.astype(dtype) if field.land is not None else none(dtype),
    )


def probe_refusals(field) -> list[str]:
    """What of a layered `field` the probe does not evaluate, each in a phrase (none: it does)."""
    surface = field.surface
    checks = (
        (surface.dim == 2 and not surface.cell_values, "a surface of cell data"),
        (all(kind in PROBE.kinds for kind in surface.kinds), f"cells of the kinds {sorted(surface.kinds)}"),
    )
    return [phrase for ok, phrase in checks if not ok]


def probes(field, x) -> bool:
    """Whether the probe takes `field`'s evaluation of the rows `x` in this program: the field's
    `engine` is on and the positions are in the precision of its tables (else the JAX path)."""
    return bool(field.engine) and x.dtype == field.depths.dtype and x.dtype.name in ("float32", "float64")


def probe(field, t, x: Float[Array, "n dim"], hint: Hints, values: bool = True) -> tuple[ProbeResults, Hints]:
    """The probe's results for the rows `x` (hinted `hint`) at time `t`, and the hints that
    locate them, in the hints' own dtypes."""
    n, dtype, surface = x.shape[0], x.dtype, field.surface
    registered = interface.registered(PROBE)
    assert registered
    inputs = ProbeInputs(
        x=x,
        cell=hint.cell.astype(jnp.int32),
        point=hint.point.astype(dtype),
        coords=hint.coords.astype(dtype),
        time=jnp.reshape(jnp.asarray(t, dtype), (1,)),
        **column_tables(field, dtype),
    )
    attrs = ProbeAttrs(
        newton_steps=np.int64(surface.newton_steps),
        walk_steps=np.int64(surface.walk_steps),
        tolerance=float(surface.containment_tolerance()),
        values=np.int64(values),
    )
    rows, pairs, ints, one = ((n, x.shape[1]), dtype), ((n, 2), dtype), ((n,), jnp.int32), ((n,), dtype)
    shapes = ProbeResults(*(jax.ShapeDtypeStruct(*s) for s in (rows, ints, pairs, pairs, ints, one, one)))
    out = interface.call(PROBE, inputs, attrs, shapes)
    cell, point, coords = (
        a.astype(b.dtype) for a, b in ((out.cell, hint.cell), (out.point, hint.point), (out.coords, hint.coords))
    )
    return out, Hints(cell, point, coords)
