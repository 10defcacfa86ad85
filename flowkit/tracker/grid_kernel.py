"""The CPU grid kernel (`flowkit.native`, `grid_chunk.cc`) as the seam (`tracker.seam`) calls
it: what it takes, its declared interface (`GRID`), its inputs.

The kernel carries each group of particles of a block (16 in its AVX-512 build, 8 in the others)
through all of a save interval's steps before the next group, its arithmetic in vectors across
the group, on a `GridField` (CMEMS, GLORYS, HYCOM and ERA5 products, z-level models: A-grids on
uniform and rectilinear axes), each lane keeping the values of the grid corners around it from
stage to stage, read again only where its lower corner or the time slice changes. It finishes
each step as the JAX step finishes it under `fk.Open` or `fk.Reflective`: off the grid
`OUT_OF_DOMAIN`, on land `BEACHED`, not finite `NONFINITE`, each stopped where its step began.
A grid locates by arithmetic, so the seeds take the field's own location. Particles that drift
beside the current (`fk.particles.Windage`, `StokesDrift`, `Leeway`, and `Combined`s of them) take
the kernel too: it adds each drift's rule (`native/drift_rules.h`) at every stage, from the
forcings they read (`tracker.drift_inputs`).
"""

from typing import NamedTuple, cast

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int32

from ..boundaries.box import Open, Reflective
from ..fields.grid import GridField
from ..particles.stepping import JUMPS
from . import drift_inputs, seam
from .pieces import Carry, RunPieces, Slots, Times
from .step import step_times


class GridInputs(NamedTuple):
    """The kernel's input buffers (`grid_chunk.cc`, `FLOWKIT_GRID_INPUTS`): the block's rows, the
    steps' times, the tableau, then the grid as `GridField` holds it; `Float` ones in the
    positions' precision. An absent table is an empty buffer."""

    x: Float[Array, "n dim"]
    status: Int32[Array, " n"]
    release: Int32[Array, " n"]
    """The step in which a waiting row is released (-1: not in this interval)."""
    step_start: Float[Array, " steps"]
    step_length: Float[Array, " steps"]
    tableau: Float[Array, "rows columns"]
    values: Float[Array, "T ..."]
    axis_0: Float[Array, " n0"]
    axis_1: Float[Array, " n1"]
    axis_2: Float[Array, " n2_or_none"]
    origin: Float[Array, " dim"]
    inv_spacing: Float[Array, " dim"]
    shape: Int32[Array, " dim"]
    uniform: Int32[Array, " dim"]
    """1 where an axis is indexed by arithmetic, 0 where by binary search."""
    periodic: Int32[Array, " dim"]
    bounds: Float[Array, "2 dim"]
    times: Float[Array, " T_or_none"]
    land: Float[Array, "..."]
    box: Float[Array, "2_or_none dim"]
    """`fk.Reflective`'s box (lo, hi); empty under `fk.Open`."""
    remainder: Float[Array, "n dim"]
    """What rounding left out of each row's position (`Rows.remainder`)."""
    keys: Int32[Array, "n 2"]
    """Each row's raw PRNG key (`Slots.keys`, its bits as int32), for leeway's jibes."""
    first_step: Int32[Array, " 1"]
    """The global index of the call's first step (what a jibe folds into the keys)."""
    drifts: drift_inputs.DriftInputs
    """The run's drifts and their forcings (`tracker.drift_inputs`), flat after the above."""


class GridResults(NamedTuple):
    """The kernel's results (`FLOWKIT_GRID_RESULTS`): each row after the steps, its position
    before the last one, and for a row it stopped the step (-1: none)."""

    x: Float[Array, "n dim"]
    status: Int32[Array, " n"]
    before: Float[Array, "n dim"]
    stopped: Int32[Array, " n"]
    remainder: Float[Array, "n dim"]
    orientation: Float[Array, " n"]
    """Each row's leeway side after its jibes (1 without leeway)."""


class GridAttrs(NamedTuple):
    """The kernel's attributes (`FLOWKIT_GRID_ATTRS`), read by name."""

    spherical: int
    longitude_origin: float
    active: int
    not_released: int
    out_of_domain: int
    beached: int
    nonfinite: int
    x64: int
    """1 where JAX's default floats are float64 (`jax_enable_x64`): the precision of a jibe's draw."""
    jumps_tag: int
    """What a jibe's key is folded with first (`particles.stepping.JUMPS`)."""


def refusals(pieces: RunPieces, dtype: np.dtype) -> list[str]:
    """What of this run on a `GridField` the kernel does not step, with positions of `dtype`, each
    in a phrase; none when it takes the run: tracers stepped by an explicit Runge–Kutta method
    on a 2-D or 3-D A-grid of velocities (as many components as axes), multilinear, with
    no-slip coasts (the readers' default), stored in the positions' precision, under `fk.Open`
    or `fk.Reflective`, tracers or ruled drifts (`drift_inputs.rules`) reading `GridField` or
    `Uniform` forcings. C-grids, `nearest`, free- and partial-slip coasts and anything else
    take the JAX step."""
    field, boundary = cast(GridField, pieces.field), pieces.boundary
    found = drift_inputs.rules(pieces.particles)
    checks = (
        (
            field.dim in (2, 3) and field.components == field.dim,
            f"a field of {field.components} components on {field.dim} axes",
        ),
        (field.staggering == "A", f"{field.staggering}-grids (it steps A-grids)"),
        (field.interpolation == "linear", f"{field.interpolation} interpolation"),
        (field.land is None or field.coast == "noslip", f"{field.coast} coasts"),
        (isinstance(boundary, Open) or type(boundary) is Reflective, f"the boundary {type(boundary).__name__}"),
    )
    stored = (field.values, field.origin, *field.axes)
    drifts = drift_inputs.refusals(field, found) if found else []
    return (
        [phrase for ok, phrase in checks if not ok]
        + seam.stepping_refusals(pieces, dtype, stored, drifts=True)
        + drifts
    )


def kernel_steps(
    pieces: RunPieces,
    times: Times,
    carry: Carry,
    slots: Slots,
    steps: Int32[Array, " steps"],
    block_id: Int32[Array, ""],
    *,
    n_blocks: int,
) -> tuple[Carry, Float[Array, "n dim"]]:
    """The global `steps` of a block by the kernel, and each row's position before the last of them."""
    rows = carry.rows
    t, h = step_times(times, steps)
    release = seam.release_steps(rows, slots, times, t, h)
    keys = (jax.lax.bitcast_convert_type(slots.keys, jnp.int32), steps[:1].astype(jnp.int32))
    out = _call(_inputs(pieces, rows, release, t, h, keys), _attrs(pieces))
    return drift_inputs.with_sides(seam.finished_rows(carry, out, t, h), out.orientation, pieces.particles), out.before


def _call(inputs: GridInputs, attrs: GridAttrs) -> GridResults:
    """The kernel's results for these inputs and attributes."""
    (n, dim), dtype = inputs.x.shape, inputs.x.dtype
    rows, ints = ((n, dim), dtype), ((n,), jnp.int32)
    shapes = GridResults(*(jax.ShapeDtypeStruct(*s) for s in (rows, ints, rows, ints, rows, ((n,), dtype))))
    return seam.call(GRID, inputs, attrs, shapes)


def _inputs(pieces: RunPieces, rows, release, t, h, keys) -> GridInputs:
    """A block's rows, its steps' times and the field's arrays as the kernel reads them; `keys`:
    the rows' keys and the first step's index, for jibes."""
    field = cast(GridField, pieces.field)
    dtype, dim = rows.x.dtype, field.dim
    none = jnp.zeros(0, dtype)
    flags = lambda values: jnp.asarray(values, jnp.int32)  # noqa: E731
    return GridInputs(
        x=rows.x,
        status=rows.status.astype(jnp.int32),
        release=release,
        step_start=t.astype(dtype),
        step_length=h.astype(dtype),
        tableau=seam.tableau_rows(pieces.integrator, dtype),
        values=field.values,
        axis_0=field.axes[0],
        axis_1=field.axes[1],
        axis_2=field.axes[2] if dim == 3 else none,
        origin=field.origin,
        inv_spacing=field.inv_spacing,
        shape=flags(field.shape),
        uniform=flags(field.uniform),
        periodic=flags(field.periodic),
        bounds=jnp.stack(field.bounds).astype(dtype),
        times=field.times if field.times is not None else none,
        land=field.land.astype(dtype) if field.land is not None else none,
        box=seam.box_input(pieces.boundary, dim, dtype),
        remainder=rows.remainder.astype(dtype),
        keys=keys[0],
        first_step=keys[1],
        drifts=drift_inputs.inputs(
            "grid", field, drift_inputs.rules(pieces.particles) or (), rows.variables, rows.x.shape[0], dtype
        ),
    )


def _attrs(pieces: RunPieces) -> GridAttrs:
    """The run's settings and Python's codes, as the kernel's attributes."""
    field = cast(GridField, pieces.field)
    return GridAttrs(
        spherical=np.int64(field.spherical),
        longitude_origin=float(field.longitude_origin),
        **seam.status_codes(GridAttrs),
        x64=np.int64(jax.config.read("jax_enable_x64")),
        jumps_tag=np.int64(JUMPS),
    )


GRID = seam.Kernel(
    name="grid",
    inputs=GridInputs,
    results=GridResults,
    attrs=GridAttrs,
    kinds={},
    refusals=refusals,
    steps=kernel_steps,
    capacity={"tableau_rows": 16},
)
"""The grid kernel as the seam declares and calls it."""
