"""The one seam of flowkit's CPU kernels (`flowkit.native`): the interface each declares, the
check of that interface against the built kernel, and the call.

Each kernel is a `Kernel`: its input buffers, results and attributes as named tuples, in the
order and element types of the layout the built kernel declares (`flowkit.native.layout`),
its vocabulary (cell kinds with their node counts; wall and inlet modes) and capacities, the
field it steps and what it refuses of a run on one (`refusals`: it takes the runs it computes
as the JAX step does), and how a run calls it (`steps`, `located`). `registered` checks the
declarations against the built kernel once before registering its targets;
`tracker.kernels.kernel_use` decides once per run which kernel, if any, takes the steps, and
the run compiles one program around it. Python's codes (statuses,
face kinds) go to a kernel as attributes; its own codes (cell kinds, modes) are read from its
layout.
"""

import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Float

from .. import native
from .._status import Status
from ..boundaries.box import Reflective
from ..fields.base import Hints
from ..integrators.runge_kutta import AbstractRungeKutta
from ..integrators.stochastic import EulerMaruyama
from ..particles.base import is_tracer
from . import drift_inputs
from .pieces import Rows, Slots, Times
from .step import is_due


@dataclass(frozen=True)
class Kernel:
    """A compiled kernel as Python declares and calls it."""

    name: str
    """Its name in `flowkit.native.KERNELS`."""
    inputs: type
    """Its input buffers, a `NamedTuple` of `Float` (the positions' precision) and `Int32` arrays."""
    results: type
    attrs: type
    """Its attributes, a `NamedTuple` of `int` and `float`."""
    kinds: dict[str, int]
    """The cell kinds it steps -> their node counts."""
    refusals: Callable
    """`(pieces, dtype) -> list[str]`: what in a run on its `field` it does not step, each in a
    phrase; none when it takes the run's steps (the platform and the build checked apart)."""
    steps: Callable
    """`(pieces, times, carry, slots, steps, block_id, *, n_blocks) -> (carry, before)`."""
    located: Callable | None = None
    """`(pieces, t0, x) -> (x, hints, inside, on land or None)`: the seeds located (and settled
    at `t0`) by the kernel, their hints exact, or None (the field's own location)."""
    modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The modes it knows by vocabulary (`walls`, `inlets`), as Python names them."""
    capacity: dict[str, int] = field(default_factory=dict)
    """The capacities Python relies on (the cell table's width)."""


def stepping_refusals(
    pieces: Any, dtype: np.dtype, stored: Sequence[Any], walks: bool = False, drifts: bool = False
) -> list[str]:
    """What every kernel refuses of a run, each in a phrase: positions in another precision than
    the field's `stored` arrays, an integrator other than an explicit Runge–Kutta method (or,
    for a kernel that `walks`, `fk.EulerMaruyama`, whose diffusivity it judges itself), a
    particle model other than tracers (or, for a kernel that adds `drifts`, the ruled drifts of
    `drift_inputs.rules`)."""
    integrator, particles = pieces.integrator, pieces.particles
    steps = "explicit Runge–Kutta methods" + (" and Euler–Maruyama" if walks else "")
    checks = (
        (
            all(a.dtype == dtype for a in stored),
            f"positions in {np.dtype(dtype).name} on a field stored in {stored[0].dtype.name}",
        ),
        (
            (isinstance(integrator, AbstractRungeKutta) and not integrator.stochastic)
            or (walks and isinstance(integrator, EulerMaruyama)),
            f"the integrator {type(integrator).__name__} (it steps {steps})",
        ),
        (
            is_tracer(particles) or (drifts and drift_inputs.rules(particles) is not None),
            f"the particle model {type(particles).__name__} (it steps tracers"
            + (" and Windage, StokesDrift, Buoyant and Leeway, and Combined ones of them)" if drifts else ")"),
        ),
    )
    return [phrase for ok, phrase in checks if not ok]


def declared(kernel: Kernel) -> native.Layout:
    """`kernel`'s interface as Python declares it, in the form of the built kernel's `native.Layout`."""
    element = lambda hint: "s32" if hint.dtypes == ("int32",) else "real"  # noqa: E731

    def buffers(spec) -> tuple:
        """The buffers of a NamedTuple of arrays, a nested one's in its place."""
        hints = typing.get_type_hints(spec).items()
        return sum(((*buffers(h),) if hasattr(h, "_fields") else ((name, element(h)),) for name, h in hints), ())

    attr_types = {int: "int64_t", float: "double"}
    return native.Layout(
        inputs=buffers(kernel.inputs),
        results=buffers(kernel.results),
        attrs=tuple((name, attr_types[hint]) for name, hint in typing.get_type_hints(kernel.attrs).items()),
        kinds={name: (-1, nodes) for name, nodes in kernel.kinds.items()},
        walls={mode: -1 for mode in kernel.modes.get("walls", ())},
        inlets={mode: -1 for mode in kernel.modes.get("inlets", ())},
        capacity=dict(kernel.capacity),
    )


def mismatches(kernel: Kernel, built: native.Layout) -> list[str]:
    """How the `built` kernel's declared layout differs from Python's declaration (empty: none)."""
    ours, found = declared(kernel), []
    for part in ("inputs", "results", "attrs"):
        if getattr(ours, part) != getattr(built, part):
            found.append(f"{part}: the kernel has {getattr(built, part)}, Python {getattr(ours, part)}")
    nodes = lambda kinds: {name: count for name, (_, count) in kinds.items()}  # noqa: E731
    if nodes(built.kinds) != nodes(ours.kinds):
        found.append(f"cell kinds and node counts: the kernel has {nodes(built.kinds)}, Python {nodes(ours.kinds)}")
    for name, value in ours.capacity.items():
        if built.capacity.get(name) != value:
            found.append(f"{name}: the kernel holds {built.capacity.get(name)}, Python writes {value}")
    for part, what in (("walls", "wall modes"), ("inlets", "inlet modes")):
        if set(getattr(built, part)) != set(getattr(ours, part)):
            found.append(f"{what}: the kernel has {sorted(getattr(built, part))}, Python {sorted(getattr(ours, part))}")
    return found


_REGISTERED: set[str] = set()


def registered(kernel: Kernel) -> bool:
    """Check the built kernel's declared layout against Python's and register its targets
    (once); true once they are.

    **Raises:** `RuntimeError` listing the differences when the built kernel was compiled from
    another layout (rebuild it: `pip install -e .`)."""
    if kernel.name not in _REGISTERED:
        found = mismatches(kernel, native.layout(kernel.name))
        if found:
            raise RuntimeError(
                f"flowkit's CPU {kernel.name} kernel was built from another layout than this flowkit's "
                f"(rebuild it: pip install -e .): {'; '.join(found)}"
            )
        native.register(kernel.name)
        _REGISTERED.add(kernel.name)
    return True


def call(kernel: Kernel, inputs: Any, attrs: Any, shapes: Any) -> Any:
    """`kernel`'s results (a `kernel.results`) for `inputs` and `attrs`, `shapes` the results'
    `jax.ShapeDtypeStruct`s; the target of the positions' precision (`inputs.x`)."""
    target = native.target(kernel.name, jnp.dtype(inputs.x.dtype).name)
    outputs = jax.ffi.ffi_call(target, tuple(shapes))(*jax.tree.leaves(inputs), **attrs._asdict())
    return kernel.results(*outputs)


def code(kernel: Kernel, part: str, name: str) -> int:
    """The built kernel's own code of `name` in its vocabulary `part` (`kinds`, `walls`, `inlets`)."""
    entry = getattr(native.layout(kernel.name), part)[name]
    return entry[0] if isinstance(entry, tuple) else entry


def tableau_rows(integrator: AbstractRungeKutta, dtype: DTypeLike) -> jax.Array:
    """An explicit Runge–Kutta `integrator`'s tableau as the kernels read it, `(rows, rows + 1)`
    in `dtype`: the stage matrix with the weights as its last row, the nodes (1 for the end
    point) as the last column: one row per point a kernel locates."""
    tableau = integrator.tableau
    stages = tableau.b.shape[0]
    table = np.zeros((stages + 1, stages + 2))
    table[:stages, :stages] = tableau.a
    table[stages, :stages] = tableau.b
    table[:stages, -1] = tableau.c
    table[stages, -1] = 1.0
    return jnp.asarray(table, dtype)


def release_steps(rows: Rows, slots: Slots, times: Times, t: Float[Array, " steps"], h: Float[Array, " steps"]):
    """The step of a call (starts `t`, lengths `h`) by whose end each waiting row is due for its
    release, as `one_step`'s release rule has it (-1: none of them): the kernels' `release`."""
    due = (rows.status == Status.NOT_RELEASED)[:, None] & jax.vmap(
        lambda end: is_due(end, slots.t_release, times.dt), out_axes=1
    )(t + h)
    return jnp.where(jnp.any(due, axis=1), jnp.argmax(due, axis=1), -1).astype(jnp.int32)


def hints_of(out: Any, was: Hints) -> Hints:
    """The rows' hints from a kernel's results `out` (its `cell`, `point`, `coords`), in the
    hints' own dtypes `was`."""
    return Hints(
        out.cell.astype(was.cell.dtype), out.point.astype(was.point.dtype), out.coords.astype(was.coords.dtype)
    )


def status_codes(attrs: type) -> dict[str, np.int64]:
    """Python's status codes (`Status`) of the statuses a kernel's attributes `attrs` name
    (`active`, `out_of_domain`, ...), by attribute."""
    names = typing.get_type_hints(attrs)
    return {name: np.int64(Status[name.upper()]) for name in names if name.upper() in Status.__members__}


def box_input(boundary: Any, dim: int, dtype: DTypeLike) -> jax.Array:
    """`fk.Reflective`'s box as the kernels read it, `(2, dim)` (lo, hi); `(0, dim)` otherwise."""
    if isinstance(boundary, Reflective):
        return jnp.stack(boundary.bounds).astype(dtype)
    return jnp.zeros((0, dim), dtype)


def finished_rows(carry: Any, out: Any, t: jax.Array, h: jax.Array, hint: Hints | None = None) -> Any:
    """`carry` with its rows as a kernel's results `out` left them: positions, statuses, what
    rounding left out, the hints where the kernel returns them, and the exit time of each row
    it stopped, the end of that step (as in `one_step`)."""
    rows = carry.rows
    at = jnp.maximum(out.stopped, 0)
    exit_time = jnp.where(out.stopped >= 0, (t[at] + h[at]).astype(rows.exit_time.dtype), rows.exit_time)
    new = (out.x, out.status.astype(rows.status.dtype), exit_time, out.remainder)
    if hint is None:
        return eqx.tree_at(lambda c: (c.rows.x, c.rows.status, c.rows.exit_time, c.rows.remainder), carry, new)
    return eqx.tree_at(
        lambda c: (c.rows.x, c.rows.status, c.rows.exit_time, c.rows.remainder, c.rows.hint), carry, (*new, hint)
    )
