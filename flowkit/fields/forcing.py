"""Forcing fields: other fields (wind, waves, ...) evaluated where the particles are.

Real drift runs combine currents with wind from an atmosphere model and Stokes drift from a wave
model, each on its own grid and time axis. A field carries such fields as `forcings`
(`fk.io.read(currents, samples={"wind": fk.io.read(wind_files)})`); each is evaluated at the
particle's position and time like the field's own sampled arrays, reaches particle models as
`fluid.samples[name]` and is recorded in `Trajectory.samples`.

A forcing is evaluated in its data's units (m/s for wind on a lon/lat grid, not degrees per
second), on the particle's first `forcing.dim` coordinates (a 2-D wind under 3-D currents), at
the particle's calendar time (the forcing's own `time_origin` is aligned with the field's).
Outside its extent a forcing is zero (a particle beyond the wind's grid feels no wind), never
NaN; `Forcings.report` logs, before a run, the seeds and times that lie outside. Outside its
time range a forcing holds its first or last slice.
"""

import dataclasses
import logging
from collections.abc import Mapping

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import Positions, TimeLike
from .analytic import Uniform
from .base import AbstractField, AbstractForcings

_log = logging.getLogger("flowkit")


class Forcing(eqx.Module):
    """One forcing field, as its host field evaluates it.

    - `field`: the forcing (any in-memory field).
    - `offset`: seconds from the host's time 0 to the forcing's (0 unless both are dated).
    - `longitude_start`: on a sphere, the forcing's first longitude: positions are wrapped into
      the 360° from there, so a forcing on [0, 360) serves currents on [-180, 180).
    """

    field: AbstractField
    offset: float
    longitude_start: float | None = eqx.field(static=True)

    def positions(self, x: Positions) -> Float[Array, "n d"]:
        """The rows of `x` as the forcing's positions: its first `dim` coordinates, longitudes
        wrapped into its 360°."""
        y = x[:, : self.field.dim]
        if self.longitude_start is None:
            return y
        return y.at[:, 0].set(self.longitude_start + jnp.mod(y[:, 0] - self.longitude_start, 360.0))

    def located(self, x: Positions):
        """`(positions, hints, inside)` of the rows of `x` in the forcing."""
        y = self.positions(x)
        hint, inside = self.field.locate_batch(y, self.field.hints(y.shape[0], y.dtype))
        return y, hint, inside

    def __call__(self, t: TimeLike, x: Positions) -> Float[Array, "n c"]:
        """The forcing's values at the rows of `x` (n, ≥ its dim) and time `t`; zero outside it."""
        f = self.field
        y, hint, inside = self.located(x)
        values, _ = f.data_batch(jnp.asarray(t, y.dtype) + self.offset, y, None, hint)
        inside = inside & jnp.all(jnp.isfinite(values), axis=-1)
        return jnp.where(inside[:, None], values, 0).astype(x.dtype)


class Forcings(AbstractForcings):
    """The forcing fields of a field, by name: what `AbstractField.samples_at` adds to its own samples."""

    named: dict[str, Forcing]

    def sample(self, t: TimeLike, x: Positions) -> dict[str, Array]:
        return {name: forcing(t, x) for name, forcing in self.named.items()}

    def report(self, seeds: np.ndarray, t0: float, t1: float) -> None:
        """Log, before a run, the seeds that start outside a forcing's extent (they get zero there)
        and a run that reaches past a forcing's times (its end slices are held)."""
        for name, forcing in self.named.items():
            f = forcing.field
            outside = ~np.asarray(_inside(forcing, jnp.asarray(seeds, f.bounds[0].dtype)))
            if outside.any():  # most seeds outside: a forcing for another region, said loudly
                _log.log(
                    logging.WARNING if outside.mean() > 0.5 else logging.INFO,
                    "forcing %r: %d of %d seeds lie outside its extent; it is zero there",
                    name,
                    outside.sum(),
                    len(seeds),
                )
            lo, hi = f.time_range
            start, end = sorted((t0 + forcing.offset, t1 + forcing.offset))
            if start < lo or end > hi:  # none of the run within its times: another period, said loudly
                _log.log(
                    logging.WARNING if end <= lo or start >= hi else logging.INFO,
                    "forcing %r: the run's times [%g, %g] s reach past its own [%g, %g] s (on its time axis); "
                    "its first or last slice is held there",
                    name,
                    start,
                    end,
                    lo,
                    hi,
                )


@eqx.filter_jit
def _inside(forcing: Forcing, x: Positions):
    """Which rows of `x` lie in the forcing's extent (compiled: once per forcing and shape)."""
    return forcing.located(x)[2]


def attach(field: AbstractField, forcings: Mapping, where: str = "samples") -> AbstractField:
    """`field` (a data field) with `forcings` `{name: field}` added."""
    if "forcings" not in {f.name for f in dataclasses.fields(field)}:
        raise TypeError(
            f"{where}: forcing fields attach to data fields (GridField, MeshField, CurvilinearField, LayeredField), "
            f"not to a {type(field).__name__}"
        )
    named = made(field, forcings, where, _own_sample_names(field), field.forcings)
    return eqx.tree_at(lambda f: f.forcings, field, named, is_leaf=lambda x: x is None)


def split(samples: Mapping | None) -> tuple[dict, dict]:
    """A field's `samples=` as `(arrays, fields)`: its own arrays, and the forcing fields."""
    samples = dict(samples or {})
    fields = {name: value for name, value in samples.items() if isinstance(value, AbstractField)}
    return {name: value for name, value in samples.items() if name not in fields}, fields


def made(field, forcings: Mapping, where: str, own: set[str], existing: Forcings | None = None) -> Forcings | None:
    """The `Forcings` of `field` (built or being built: its coordinates, `dim` and `time_origin`
    set) with `forcings` added to `existing`; None when there are none. Checked: each is an
    in-memory field on the same kind of coordinates (both on lon/lat, or both not), with no more
    dimensions than `field`, under a name that neither `own` (the field's arrays) nor another
    forcing takes."""
    named = dict(existing.named) if existing is not None else {}
    for name, forcing in forcings.items():
        if name in named or name in own:
            raise ValueError(
                f"{where}[{name!r}]: the field already samples an array named {name!r}; give the forcing another name"
            )
        named[str(name)] = _forcing(field, forcing, f"{where}[{name!r}]")
    return Forcings(named) if named else None


def _forcing(field, forcing, where: str) -> Forcing:
    if not isinstance(forcing, AbstractField):
        raise TypeError(f"{where}: expected a flowkit field (e.g. fk.io.read(wind_file)), got {type(forcing).__name__}")
    uniform = isinstance(forcing, Uniform)  # the same everywhere: on any positions (OpenDrift's reader_constant)
    if forcing.spherical != field.spherical and not uniform:
        kinds = {True: "longitude/latitude", False: "Cartesian coordinates"}
        raise ValueError(
            f"{where}: the forcing is on {kinds[forcing.spherical]} and the field on {kinds[field.spherical]}; "
            "both must use the same positions"
        )
    if forcing.dim > field.dim:
        raise ValueError(
            f"{where}: a {forcing.dim}-D forcing cannot be evaluated at the field's {field.dim}-D positions"
        )
    offset = 0.0
    if forcing.time_origin is not None and field.time_origin is not None:
        offset = float(forcing.time_origin.seconds(field.time_origin.date))
    start = float(forcing.bounds[0][0]) if forcing.spherical and not uniform else None
    return Forcing(forcing, offset, start)


def sample_names(field: AbstractField) -> set[str]:
    """Every name `field.samples_at` gives: its own sampled arrays and its forcings."""
    return _own_sample_names(field) | set(field.forcings.named if field.forcings is not None else ())


def _own_sample_names(field) -> set[str]:
    import jax

    x = jnp.asarray(field.bounds[0])[None] * 1.0
    shapes = jax.eval_shape(lambda f, y: f.sample_batch(0.0, y, f.hints(1, y.dtype)), field, x)
    return set(shapes)
