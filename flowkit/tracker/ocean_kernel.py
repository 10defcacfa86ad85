"""The CPU ocean kernel (`flowkit.native`, `ocean_chunk.cc`) as the seam (`tracker.seam`) calls
it: what it takes, its declared interface (`OCEAN`), its inputs.

The kernel carries each group of particles of a block (16 in its AVX-512 build, 8 in the others)
through all of a save interval's steps before the next group, its arithmetic in vectors across
the group, on a `LayeredField` (ROMS and CROCO s-levels, TELEMAC planes, depth-averaged
models): each particle's horizontal cell
located from its hint (on a curvilinear grid, `LayeredField.grid_cells`, the floor of its
fractional indices, which the stages step as `fields.grid_chart` does), its column's bracket of
levels carried from stage to stage, the step's
end kept in the water and finished as the JAX step finishes it under `fk.Open` (off the mesh:
`OUT_OF_DOMAIN`; on land: `BEACHED`; not finite: `NONFINITE`; each stopped where its step
began). It also locates and settles the seeds (`kernel_located`).
"""

from typing import NamedTuple, cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int32

from .._custom_types import TimeLike
from .._status import Status
from ..boundaries.box import Open, Reflective
from ..diffusion import Constant, Horizontal
from ..fields import cells
from ..fields.base import Hints
from ..fields.layered import LayeredField
from ..integrators.runge_kutta import Euler
from ..integrators.stochastic import EulerMaruyama
from ..particles.stepping import JUMPS
from . import drift_inputs, seam
from .pieces import Carry, Rows, RunPieces, Slots, Times
from .step import step_times


class OceanInputs(NamedTuple):
    """The kernel's input buffers (`ocean_chunk.cc`, `FLOWKIT_OCEAN_INPUTS`): the block's rows,
    the steps' times, the tableau, the surface mesh's tables, then the columns; `Float` ones in
    the positions' precision. An absent table is an empty buffer."""

    x: Float[Array, "n dim"]
    status: Int32[Array, " n"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 2"]
    coords: Float[Array, "n 2"]
    release: Int32[Array, " n"]
    """The step in which a waiting row is released (-1: not in this interval)."""
    step_start: Float[Array, " steps"]
    step_length: Float[Array, " steps"]
    tableau: Float[Array, "rows columns"]
    affine_map: Float[Array, "cells map"]
    convex: Int32[Array, " cells"]
    """1 where a cell is a strictly convex quadrilateral (`LayeredField.convex_cells`)."""
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
    box: Float[Array, "2_or_none dim"]
    """`fk.Reflective`'s box (lo, hi); empty under `fk.Open`."""
    keys: Int32[Array, "n 2"]
    """Each row's raw PRNG key (`Slots.keys`, its bits as int32), for a random walk."""
    first_step: Int32[Array, " 1"]
    """The global index of the call's first step (what a random walk folds into the keys)."""
    diffusivity: Float[Array, " 3"]
    """A random walk's diffusivity per axis (`walk` 1), or Kh, Kh, Kv in m²/s (`walk` 2)."""
    remainder: Float[Array, "n dim"]
    """What rounding left out of each row's position (`Rows.remainder`)."""
    drifts: drift_inputs.DriftInputs
    """The run's drifts and their forcings (`tracker.drift_inputs`), flat after the above."""


class OceanResults(NamedTuple):
    """The kernel's results (`FLOWKIT_OCEAN_RESULTS`): each row after the steps, its position
    before the last one, and for a row it stopped the step (-1: none)."""

    x: Float[Array, "n dim"]
    status: Int32[Array, " n"]
    cell: Int32[Array, " n"]
    point: Float[Array, "n 2"]
    coords: Float[Array, "n 2"]
    before: Float[Array, "n dim"]
    stopped: Int32[Array, " n"]
    remainder: Float[Array, "n dim"]
    orientation: Float[Array, " n"]
    """Each row's leeway side after its jibes (1 without leeway)."""


class OceanAttrs(NamedTuple):
    """The kernel's attributes (`FLOWKIT_OCEAN_ATTRS`), read by name."""

    newton_steps: int
    walk_steps: int
    tolerance: float
    spherical: int
    active: int
    not_released: int
    out_of_domain: int
    beached: int
    nonfinite: int
    locate: int
    """1: no steps; each row located by its bin's search alone and its depth settled (`kernel_located`)."""
    grid_i: int
    """The cells of a curvilinear grid along its first axis (`LayeredField.grid_cells`: steps in
    its fractional indices, `fields.grid_chart`), or 0: steps of positions."""
    grid_j: int
    walk: int
    """0: no random walk; 1: `fk.EulerMaruyama` of a constant diffusivity per axis; 2: of
    `fk.diffusion.Horizontal(Kh, Kv)` with numbers, on the sphere."""
    x64: int
    """1 where JAX's default floats are float64 (`jax_enable_x64`): the precision of a jibe's draw."""
    jumps_tag: int
    """What a jibe's key is folded with first (`particles.stepping.JUMPS`)."""


def refusals(pieces: RunPieces, dtype: np.dtype) -> list[str]:
    """What of this run on a `LayeredField` the kernel does not step, with positions of `dtype`
    (on CPUs with the kernel built: `tracker.kernels.kernel_use`), each in a phrase; none when it
    takes the run: tracers stepped by an explicit Runge–Kutta method, or by `fk.EulerMaruyama`
    of a constant diffusivity (per axis, or `fk.diffusion.Horizontal`'s numbers on the sphere),
    on a layered field over triangles and quadrilaterals stored in the positions' precision,
    with no walls (`fk.Open`, the boundary of ocean data on the sphere) or the reflecting walls
    of its box (`fk.Reflective`, the boundary of a projected model's data). Anything else takes
    the JAX step."""
    field, boundary = cast(LayeredField, pieces.field), pieces.boundary
    surface = field.surface
    found = drift_inputs.rules(pieces.particles) or ()
    checks = (
        (surface.dim == 2 and not surface.cell_values, "a surface of cell data"),
        (all(kind in OCEAN.kinds for kind in surface.kinds), f"cells of the kinds {sorted(surface.kinds)}"),
        (isinstance(boundary, Open) or type(boundary) is Reflective, f"the boundary {type(boundary).__name__}"),
    )
    stored = (field.depths, field.velocities, field.floor, surface.affine_map)
    refused = [phrase for ok, phrase in checks if not ok]
    refused += seam.stepping_refusals(pieces, dtype, stored, walks=True, drifts=True)
    refused += drift_inputs.refusals(field, found) if found else []
    if isinstance(pieces.integrator, EulerMaruyama) and _walk(pieces)[0] == 0:
        diffusivity = pieces.integrator.diffusivity
        refused.append(
            f"the diffusivity {type(diffusivity).__name__} (it walks constant diffusivities, and Horizontal's "
            "of numbers on the sphere)"
        )
    return refused


def _walk(pieces: RunPieces) -> tuple[int, Float[Array, " 3"]]:
    """`(walk, diffusivity)`: the kernel's kind of random walk for the run's integrator (0: none,
    or none it computes), decided by the diffusivity's type and shape (also in the traced chunk),
    and its three diffusivities."""
    integrator, dim = pieces.integrator, pieces.field.dim
    none = jnp.zeros(3)
    if not isinstance(integrator, EulerMaruyama):
        return 0, none
    k = integrator.diffusivity
    if isinstance(k, Constant) and _numbers(k.K) and jnp.size(k.K) in (1, dim):
        return 1, jnp.zeros(3).at[:dim].set(jnp.broadcast_to(jnp.asarray(k.K), (dim,)))
    if isinstance(k, Horizontal) and _numbers(k.Kh, k.Kv) and pieces.field.spherical and dim in (2, 3):
        return 2, jnp.stack([jnp.asarray(v, float).reshape(()) for v in (k.Kh, k.Kh, k.Kv if dim == 3 else 0.0)])
    return 0, none


def _numbers(*values) -> bool:
    """Whether every value is a number or an array of them (also traced), not a function of
    `(t, x)` or a sample's name."""
    return all(isinstance(v, np.ndarray | jax.Array | float | int) and jnp.size(v) >= 1 for v in values)


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
    walk = (jax.lax.bitcast_convert_type(slots.keys, jnp.int32), steps[:1].astype(jnp.int32))
    out = _call(_inputs(pieces, rows, release, t, h, walk), _attrs(pieces))
    carry = seam.finished_rows(carry, out, t, h, seam.hints_of(out, rows.hint))
    return drift_inputs.with_sides(carry, out.orientation, pieces.particles), out.before


def kernel_located(
    pieces: RunPieces, t0: TimeLike, x: Float[Array, "n dim"]
) -> tuple[Float[Array, "n dim"], Hints, Bool[Array, " n"], Bool[Array, " n"] | None]:
    """The seeds `x` located and kept in the water at `t0`, as `LayeredField.settle_batch`,
    `locate_batch` and `beached_batch` place points hinted nowhere (from the cell a grid's index
    lookup guesses, else by their bins): `(x, hints (exact), inside, on land)` (None without a
    land mask), by the kernel's walk and search, so that the seeds' program compiles no JAX
    location at all."""
    n, dtype, field = x.shape[0], x.dtype, cast(LayeredField, pieces.field)
    surface = field.surface
    hint = surface.hints(n, dtype)
    if surface.lookup is not None:  # a grid's index lookup guesses each seed's cell
        hint = eqx.tree_at(lambda h: h.cell, hint, surface.lookup.cells(x[:, :2]))
    never = jnp.zeros(n, jnp.int32)
    rows = Rows(x, never, jnp.zeros(n, dtype), hint, {}, never, jnp.zeros_like(x))
    start = jnp.reshape(jnp.asarray(t0, dtype), (1,))
    none = (jnp.zeros((n, 2), jnp.int32), jnp.zeros(1, jnp.int32))
    out = _call(
        _inputs(pieces, rows, jnp.full(n, -1, jnp.int32), start, jnp.zeros(1, dtype), none, drifts=False),
        _attrs(pieces)._replace(locate=np.int64(1)),
    )
    beached = None if field.land is None else out.status == Status.BEACHED
    return out.x, Hints(out.cell, out.point, out.coords, exact=True), out.cell >= 0, beached


def _call(inputs: OceanInputs, attrs: OceanAttrs) -> OceanResults:
    """The kernel's results for these inputs and attributes."""
    (n, dim), dtype = inputs.x.shape, inputs.x.dtype
    rows, surface, ints = ((n, dim), dtype), ((n, 2), dtype), ((n,), jnp.int32)
    sides = ((n,), dtype)
    shapes = OceanResults(
        *(jax.ShapeDtypeStruct(*s) for s in (rows, ints, ints, surface, surface, rows, ints, rows, sides))
    )
    return seam.call(OCEAN, inputs, attrs, shapes)


def _inputs(pieces: RunPieces, rows, release, t, h, walk, drifts: bool = True) -> OceanInputs:
    """A block's rows, its steps' times and the field's tables as the kernel reads them; `walk`:
    the rows' keys and the first step's index, for a random walk; `drifts`: the particles'
    drifts and their forcings (none where the kernel only locates)."""
    field = cast(LayeredField, pieces.field)
    surface, hint, x, dtype = field.surface, rows.hint, rows.x, rows.x.dtype
    none = lambda kind=jnp.int32: jnp.zeros(0, kind)  # noqa: E731
    return OceanInputs(
        x=rows.x,
        status=rows.status.astype(jnp.int32),
        cell=hint.cell.astype(jnp.int32),
        point=hint.point.astype(dtype),
        coords=hint.coords.astype(dtype),
        release=release,
        step_start=t.astype(dtype),
        step_length=h.astype(dtype),
        tableau=seam.tableau_rows(_advection(pieces.integrator), dtype),
        affine_map=surface.affine_map,
        convex=field.convex_cells,
        nodes=surface.nodes,
        kind_of_cell=surface.kind_of_cell if surface.kind_of_cell is not None else none(),
        kind_code=jnp.asarray([seam.code(OCEAN, "kinds", k) for k in surface.kinds], jnp.int32),
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
        box=seam.box_input(pieces.boundary, x.shape[1], dtype),
        keys=walk[0],
        first_step=walk[1],
        diffusivity=jnp.asarray(_walk(pieces)[1], dtype),
        remainder=rows.remainder.astype(dtype),
        drifts=drift_inputs.inputs(
            "ocean",
            field,
            (drift_inputs.rules(pieces.particles) or ()) if drifts else (),
            rows.variables,
            x.shape[0],
            dtype,
        ),
    )


def _advection(integrator):
    """The explicit Runge–Kutta method that advects the run's particles: Euler–Maruyama's Euler."""
    return Euler() if isinstance(integrator, EulerMaruyama) else integrator


def _attrs(pieces: RunPieces) -> OceanAttrs:
    """The run's settings and Python's codes, as the kernel's attributes."""
    field = cast(LayeredField, pieces.field)
    walk = _walk(pieces)[0]
    # a random walk and a particle model step positions (the JAX step charts tracers' alone)
    charted = not walk and not drift_inputs.rules(pieces.particles)
    grid = field.grid_cells or (0, 0) if charted else (0, 0)
    return OceanAttrs(
        newton_steps=np.int64(field.surface.newton_steps),
        walk_steps=np.int64(field.surface.walk_steps),
        tolerance=float(field.surface.containment_tolerance()),
        spherical=np.int64(field.spherical),
        **seam.status_codes(OceanAttrs),
        locate=np.int64(0),
        grid_i=np.int64(grid[0]),
        grid_j=np.int64(grid[1]),
        walk=np.int64(walk),
        x64=np.int64(jax.config.read("jax_enable_x64")),
        jumps_tag=np.int64(JUMPS),
    )


OCEAN = seam.Kernel(
    name="ocean",
    inputs=OceanInputs,
    results=OceanResults,
    attrs=OceanAttrs,
    kinds={name: cells.KINDS[name].nodes for name in ("triangle", "quad")},
    refusals=refusals,
    steps=kernel_steps,
    located=kernel_located,
    capacity={"map_columns": 2 + 2 * 2 + cells.box_columns(2)},
)
"""The ocean kernel as the seam declares and calls it."""
