"""The field contract: velocity at one time and one position."""

import abc
import functools
import inspect
from types import ModuleType

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import DTypeLike
from jaxtyping import Array, ArrayLike, Bool, Float, Int

from .._custom_types import Args, Bounds, BoundsLike, HostOrDevice, Position, Positions, TimeLike, Velocity
from .._time import TimeOrigin

SKIP = -2
"""The hinted cell of a row whose result the caller discards (a particle that is not moving): a
field that locates points does no location work for it."""


class Hints(eqx.Module):
    """Where each row was last located, carried from one evaluation to the next (RK stage to
    stage, step to step) so that the next location starts there.

    - `cell`: the cell it was found in (-1: unknown; `SKIP`: not to be located at all);
    - `point`: the point that was located (NaN where none was, or where it lay outside): a row
      evaluated again at exactly this point reuses the location instead of repeating it;
    - `coords`: its parametric coordinates in `cell`, which start the next location's Newton
      iterations warm;
    - `exact` (static): these hints locate exactly the rows they come with, as `locate_batch`
      returned them for those rows: a field that locates takes them as they are, with no
      location code in the program (an integrator's stages, which locate once per point).

    Fields that locate nothing (grids, closed forms) carry cell -1 and zero-width arrays.
    """

    cell: Int[HostOrDevice, " n"]
    point: Float[HostOrDevice, "n w"]
    coords: Float[HostOrDevice, "n w"]
    exact: bool = eqx.field(default=False, static=True)

    @classmethod
    def of_cells(cls, cell: Int[HostOrDevice, " n"], width: int, dtype: DTypeLike, xp: ModuleType = jnp) -> "Hints":
        """Hints that know only a cell per row (a point to locate there is still to be found);
        `xp`: `jnp`, or `np` for host-side arrays."""
        n = cell.shape[0]
        return cls(cell, xp.full((n, width), xp.nan, dtype), xp.zeros((n, width), dtype))

    @classmethod
    def unknown(cls, n: int, width: int, dtype: DTypeLike, xp: ModuleType = jnp) -> "Hints":
        """`n` rows located nowhere yet."""
        return cls.of_cells(xp.full(n, -1, xp.int32), width, dtype, xp)

    def skip(self, mask: Bool[Array, " n"]) -> "Hints":
        """These hints with the rows `mask` marked `SKIP`."""
        return eqx.tree_at(lambda h: h.cell, self, jnp.where(mask, SKIP, self.cell))

    def marked(self, exact: bool) -> "Hints":
        """These hints, marked as locating exactly the rows they come with (or not)."""
        return Hints(self.cell, self.point, self.coords, exact)

    def rows(self, index: ArrayLike | slice) -> "Hints":
        """The rows `index` (any NumPy-style index along the first axis)."""
        return jax.tree.map(lambda a: a[index], self)


def select(mask: Bool[Array, " n"], a, b):
    """`jnp.where(mask, a, b)` row by row over two pytrees of per-row arrays (e.g. `Hints`)."""
    return jax.tree.map(lambda u, v: jnp.where(mask.reshape(mask.shape + (1,) * (u.ndim - 1)), u, v), a, b)


class AbstractForcings(eqx.Module):
    """Fields a field carries to be sampled beside its own arrays (`flowkit.fields.forcing.Forcings`)."""

    named: eqx.AbstractVar[dict]

    @abc.abstractmethod
    def sample(self, t: TimeLike, x: Positions) -> dict[str, Array]:
        """Each forcing's value at the rows of `x` at time `t`, by name."""


class AbstractField(eqx.Module):
    """A velocity field $u(t, x)$ in `dim` dimensions.

    `field(t, x, args)` evaluates ONE point; it has diffrax's vector-field signature, so
    `diffrax.ODETerm(field)` works unchanged. Batches are made with `jax.vmap`, by the tracker.

    **Attributes:**

    - `bounds`: `(lo, hi)`, arrays of shape `(dim,)`: the box the field describes.
    - `dim`: number of spatial dimensions (static).
    - `time_range`: `(t_min, t_max)` over which the field is defined (infinite for analytic flows).
    - `periodic`: per-axis flags (static); the field wraps positions on those axes itself.
    - `spherical`: positions are longitude and latitude in degrees (then depth), velocities
      m/s converted at each particle's latitude; false for Cartesian fields.
    - `time_origin`: the calendar date of time 0 of dated data (ocean and atmosphere files),
      else None: times are plain seconds.
    - `times`: the times of the data's slices (what `time_leaves` runs along); None for a
      steady field or a closed form.
    """

    spherical: eqx.AbstractVar[bool]
    time_origin: eqx.AbstractVar["TimeOrigin | None"]
    times: eqx.AbstractVar[Float[Array, " T"] | None]
    forcings: eqx.AbstractVar["AbstractForcings | None"]
    """Other fields evaluated at the particles beside the field's own samples (wind, waves; see
    `flowkit.fields.forcing`); data fields hold them, closed forms none."""
    shared_location: eqx.AbstractClassVar[bool]
    """Whether integrators locate each step's end point together with their stages' points
    (one location in the compiled step, not two) and hand the tracker its hints: for fields
    whose `locate_batch` is a costly search (a mesh's walk) and whose `settle_batch` leaves
    points where their hints locate them (a layered field's settling moves depths only)."""
    kernel: eqx.AbstractClassVar[str | None]
    """The CPU kernel whose compiled steps evaluate this kind of field (a name of
    `flowkit.tracker.kernels.KERNELS`: `"mesh"`, `"ocean"`, `"grid"`), or None: runs on it take
    the JAX step. The kernel still refuses, in the run's log, what of a run it does not step."""
    time_invariant: eqx.AbstractClassVar[frozenset[str]]
    """The members that do not change in time (geometry, location, land, cell sizes): what a
    `flowkit.io.StreamedField` of this field answers from its template (`TIME_INVARIANT` and
    the field's own)."""
    bounds: eqx.AbstractVar[Bounds]
    dim: eqx.AbstractVar[int]
    time_range: eqx.AbstractVar[tuple[float, float]]
    periodic: eqx.AbstractVar[tuple[bool, ...]]

    @abc.abstractmethod
    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        """Velocity at time `t` and position `x` (shape `(dim,)`)."""

    @property
    def nbytes(self) -> int:
        """Device memory held by the field's arrays (one copy)."""
        return sum(leaf.nbytes for leaf in jax.tree.leaves(self) if isinstance(leaf, jax.Array))

    @abc.abstractmethod
    def in_domain(self, x: Position) -> Bool[Array, ""]:
        """Whether `x` lies where the field has data (always true for closed-form flows)."""

    # Batch interface used inside the tracker's compiled step. Fields whose lookup depends on
    # where a particle was before (meshes: the cell it was last found in) carry the hint; for
    # every other field it passes through untouched (`plain_*` below implement that).

    @abc.abstractmethod
    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        """Hints for `n` rows located nowhere yet (fields that locate give them their width)."""

    @abc.abstractmethod
    def velocity_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Positions, Hints]:
        """Velocities at the rows of `x` and the updated hints."""

    @abc.abstractmethod
    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Array, Hints]:
        """The field's values at the rows of `x` in the data's own units (m/s where positions
        are degrees: what a forcing gives) and the updated hints."""

    @abc.abstractmethod
    def locate_batch(self, x: Positions, hint: Hints | None) -> tuple[Hints, Bool[Array, " n"]]:
        """Updated hints and whether each row of `x` lies in the domain; `hint` None: rows
        located nowhere yet (which a field may search for without checking any hint)."""

    @abc.abstractmethod
    def sample_batch(self, t: TimeLike, x: Positions, hint: Hints) -> dict[str, Array]:
        """Extra arrays (pressure, ...) at the rows of `x`, for `Trajectory.samples`."""

    def samples_at(self, t: TimeLike, x: Positions, hint: Hints) -> dict[str, Array]:
        """Everything sampled at the rows of `x`: the field's own arrays and its forcings."""
        return self.with_forcings(t, x, self.sample_batch(t, x, hint))

    def with_forcings(self, t: TimeLike, x: Positions, own: dict[str, Array]) -> dict[str, Array]:
        """The field's `own` sampled arrays at the rows of `x` with its forcings' samples there added."""
        return own if self.forcings is None else {**own, **self.forcings.sample(t, x)}

    def samples_at_point(self, t: TimeLike, x: Position) -> dict[str, Array]:
        """Everything sampled at ONE point (located from scratch): for per-point evaluations."""
        return jax.tree.map(lambda a: a[0], self.samples_at(t, x[None], self.hints(1, x.dtype)))

    @abc.abstractmethod
    def beached_batch(self, x: Positions, hint: Hints | None = None) -> Bool[Array, " n"] | None:
        """Which rows of `x` (located at `hint`, where the field locates) lie on land (fields
        with a land mask), or None: no land at all, and no cost in the step."""

    @abc.abstractmethod
    def settle_batch(
        self, t: TimeLike, x: Positions, hint: Hints | None, reflect: bool = False
    ) -> tuple[Positions, Hints | None]:
        """Positions after a step, at its end time `t`, brought into the field's own range
        (`canonical_batch`; a layered ocean also keeps depths in the water: `reflect` mirrors
        them at the surface and the sea floor, for random walks), and their hints (None, as
        given, where it located nothing: seeds)."""

    @abc.abstractmethod
    def cell_sizes(self, x: Positions, hint: Hints) -> Float[Array, "n dim"] | None:
        """The size along each axis, in position units, of the cell each row of `x` lies in
        (grid spacing; a mesh cell's shortest edge): what a step is measured against for its
        Courant number `max_i |u_i| dt / size_i`. None for fields without cells (closed forms)."""

    @abc.abstractmethod
    def max_courant_rate(self) -> float | None:
        """The largest `max_i |u_i| / size_i` (1/s) over the data's nodes and times (host side):
        `dt="auto"` divides the Courant number asked for by it. None without cells."""

    @abc.abstractmethod
    def time_leaves(self) -> dict:
        """The arrays whose first axis is time (along `times`), by name: what a streamed series
        replaces window by window (`flowkit.fields.streamed`); empty for fields without time slices."""

    @abc.abstractmethod
    def value_components(self) -> int:
        """Components of the field's values: `dim` for a velocity field (a gridded or mesh field
        may hold other arrays, e.g. a scalar, which the tracker refuses)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """What the field's data is, in a few words (sizes, cells, time slices), for a run's
        header; empty for closed-form flows."""

    @abc.abstractmethod
    def canonical_batch(self, x: Positions) -> Positions:
        """Positions in the field's own range after a step (a sphere's longitudes in one period,
        latitudes folded over the poles)."""


TIME_INVARIANT = frozenset(
    {"bounds", "dim", "periodic", "spherical", "time_origin", "in_domain", "hints", "locate_batch"}
    | {"beached_batch", "canonical_batch", "cell_sizes", "max_courant_rate", "forcings", "velocity_array"}
)
"""The members of every field that do not change in time (`AbstractField.time_invariant`)."""


class AbstractWithSeaFloor(AbstractField):
    """A field with a sea floor: the capability particle models that settle on it read
    (`Needs(sea_floor=True)`)."""

    @abc.abstractmethod
    def sea_floor_batch(self, t: TimeLike, x: Positions, hint: Hints) -> Float[Array, " n"]:
        """The sea floor's depth below the surface (metres) at each row's place at time `t`
        (rows located at `hint`)."""


class AbstractSampledTogether(AbstractField):
    """A field that finds a row's velocity, its sampled arrays and its sea floor in one lookup:
    what a particle model reading samples (water temperature, salinity) is given through, so
    that its step locates each row once, as a tracer's does."""

    @abc.abstractmethod
    def values_together(
        self, t: TimeLike, x: Positions, args: Args, hint: Hints, samples: bool, sea_floor: bool
    ) -> tuple[Positions, dict[str, Array], Float[Array, " n"] | None, Hints]:
        """`(velocity, samples, sea floor, hints)` at the rows of `x`: `velocity_batch`'s, and as
        asked `samples_at`'s (else empty) and `sea_floor_batch`'s (else None)."""


def plain_velocity_batch(field: AbstractField, t: TimeLike, x: Positions, args: Args, hint: Hints):
    """`velocity_batch` of a field that locates nothing: `field(t, x, args)` per row, the hint as it came."""
    return jax.vmap(field, in_axes=(None, 0, None))(t, x, args), hint


def one_position(x, dim: int) -> Array:
    """`x` as one position `(dim,)`, the contract of `field(t, x)`; a batch of rows is refused
    with the way to evaluate it (`jax.vmap`), not met by a shape error deep in the lookup."""
    x = jnp.asarray(x)
    if x.shape != (dim,):
        raise ValueError(
            f"field(t, x) takes one position of shape ({dim},), got shape {x.shape}; evaluate rows with "
            "jax.vmap(field, in_axes=(None, 0))(t, x)"
        )
    return x


def plain_locate_batch(field: AbstractField, x: Positions, hint: Hints | None):
    """`locate_batch` of a field that locates nothing: its `in_domain` per row."""
    return field.hints(x.shape[0], x.dtype) if hint is None else hint, jax.vmap(field.in_domain)(x)


def time_slices(times: Float[HostOrDevice, " T"] | None) -> str:
    """`times` in a field's `describe()`: how many slices, or nothing for a steady field."""
    return "" if times is None else f", {times.shape[0]} times"


def time_weights(times: Float[Array, " T"] | None, t: TimeLike) -> tuple[Int[Array, ""], Float[Array, ""] | None]:
    """Index of the time slice at or before `t` and the weight of the next one (clamped to the
    series); `(0, None)` for a steady field (`times is None`)."""
    if times is None:
        return jnp.asarray(0, jnp.int32), None
    n = times.shape[0]
    it = jnp.clip(jnp.searchsorted(times, t, side="right") - 1, 0, n - 2).astype(jnp.int32)
    return it, jnp.clip((t - times[it]) / (times[it + 1] - times[it]), 0, 1)


def slice_rows(table: Float[Array, "T P c"], it, rows: Int[Array, " n"]) -> Float[Array, "n c"]:
    """`table[it][rows]` as one gather from the flattened table, the slice in the row index: as
    fast as slicing first, and under `jax.vmap` over the time no slice is copied per point."""
    return table.reshape(-1, table.shape[-1])[it * table.shape[1] + rows]


def node_rows(
    table: Float[Array, "T P c"],
    times: Float[Array, " T"] | None,
    t: TimeLike,
    nodes: Int[Array, "n k"],
    weights: Float[Array, "n k"],
) -> Float[Array, "n c"]:
    """`table[T, P, c]` at rows given by their `(n, k)` `nodes` and shape-function `weights`,
    linear in time between the slices around `t` (`times` None: one steady slice)."""
    it, wt = time_weights(times, t)
    total = None
    for i in range(nodes.shape[1]):
        row = slice_rows(table, it, nodes[:, i])
        if times is not None:
            row = row + wt * (slice_rows(table, it + 1, nodes[:, i]) - row)
        total = weights[:, i : i + 1] * row if total is None else total + weights[:, i : i + 1] * row
    return total.astype(weights.dtype)


def as_bounds(
    bounds: BoundsLike, dim: int | None = None, name: str = "bounds"
) -> tuple[Float[Array, " dim"], Float[Array, " dim"]]:
    """Check and convert `(lo, hi)` into a pair of float arrays of equal length with lo < hi."""
    import jax.numpy as jnp
    import numpy as np

    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lo, hi) of coordinate arrays, got {bounds!r}") from None
    lo = np.atleast_1d(np.asarray(lo, dtype=np.float64))
    hi = np.atleast_1d(np.asarray(hi, dtype=np.float64))
    if lo.ndim != 1 or lo.shape != hi.shape:
        raise ValueError(f"{name}: lo and hi must be 1-D and of equal length, got shapes {lo.shape} and {hi.shape}")
    if dim is not None and lo.shape[0] != dim:
        raise ValueError(f"{name} must have {dim} coordinates per corner, got {lo.shape[0]}")
    if not np.all(hi > lo):
        raise ValueError(f"{name}: every hi must exceed its lo, got lo={lo.tolist()} hi={hi.tolist()}")
    return jnp.asarray(lo), jnp.asarray(hi)


def built_by(constructor: str):
    """A class decorator for fields whose dataclass constructor takes their stored arrays: a call
    that does not fit it (the old call forms, `GridField(data, axes, dtype=...)`) is refused in
    one line naming `constructor`, the way such a field is made from data."""

    def decorate(cls):
        init = cls.__init__
        signature = inspect.signature(init)

        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            try:
                signature.bind(self, *args, **kwargs)
            except TypeError as error:
                raise TypeError(
                    f"{cls.__name__}(...) takes the arrays it stores; a {cls.__name__} is made from data by "
                    f"{cls.__name__}.{constructor}(...) ({error})"
                ) from None
            init(self, *args, **kwargs)

        cls.__init__ = __init__
        return cls

    return decorate
