"""The interfaces of flowkit's compiled CPU library as Python declares them, the check of each
against what the built library declares (`flowkit.native.layout`), and the call.

An `Interface` names its input buffers, results and attributes as named tuples, in the order
and element types of the built handler's layout, its vocabulary (cell kinds with their node
counts; wall and inlet modes) and capacities. `registered` checks a declaration against the
built library once before registering its targets; `call` runs it inside a compiled program.
The trackers' kernels (`flowkit.tracker.seam.Kernel`) and the ocean probe
(`flowkit.fields.layered_probe`) are interfaces.
"""

import typing
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp

from . import Layout, layout, register, target


@dataclass(frozen=True, kw_only=True)
class Interface:
    """A handler of the library as Python declares and calls it."""

    name: str
    """Its name in `flowkit.native.KERNELS`."""
    inputs: type
    """Its input buffers, a `NamedTuple` of `Float` (the positions' precision) and `Int32` arrays."""
    results: type
    attrs: type
    """Its attributes, a `NamedTuple` of `int` and `float`."""
    kinds: dict[str, int]
    """The cell kinds it knows -> their node counts."""
    modes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The modes it knows by vocabulary (`walls`, `inlets`), as Python names them."""
    capacity: dict[str, int] = field(default_factory=dict)
    """The capacities Python relies on (the cell table's width)."""


def declared(kernel: Interface) -> Layout:
    """`kernel`'s interface as Python declares it, in the form of the built kernel's `Layout`."""
    element = lambda hint: "s32" if hint.dtypes == ("int32",) else "real"  # noqa: E731
    buffers = lambda spec: tuple((name, element(hint)) for name, hint in typing.get_type_hints(spec).items())  # noqa: E731
    attr_types = {int: "int64_t", float: "double"}
    return Layout(
        inputs=buffers(kernel.inputs),
        results=buffers(kernel.results),
        attrs=tuple((name, attr_types[hint]) for name, hint in typing.get_type_hints(kernel.attrs).items()),
        kinds={name: (-1, nodes) for name, nodes in kernel.kinds.items()},
        walls={mode: -1 for mode in kernel.modes.get("walls", ())},
        inlets={mode: -1 for mode in kernel.modes.get("inlets", ())},
        capacity=dict(kernel.capacity),
    )


def mismatches(kernel: Interface, built: Layout) -> list[str]:
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


def registered(kernel: Interface) -> bool:
    """Check the built kernel's declared layout against Python's and register its targets
    (once); true once they are.

    **Raises:** `RuntimeError` listing the differences when the built kernel was compiled from
    another layout (rebuild it: `pip install -e .`)."""
    if kernel.name not in _REGISTERED:
        found = mismatches(kernel, layout(kernel.name))
        if found:
            raise RuntimeError(
                f"flowkit's CPU {kernel.name} kernel was built from another layout than this flowkit's "
                f"(rebuild it: pip install -e .): {'; '.join(found)}"
            )
        register(kernel.name)
        _REGISTERED.add(kernel.name)
    return True


def call(kernel: Interface, inputs: Any, attrs: Any, shapes: Any) -> Any:
    """`kernel`'s results (a `kernel.results`) for `inputs` and `attrs`, `shapes` the results'
    `jax.ShapeDtypeStruct`s; the target of the positions' precision (`inputs.x`)."""
    name = target(kernel.name, jnp.dtype(inputs.x.dtype).name)
    outputs = jax.ffi.ffi_call(name, tuple(shapes))(*inputs, **attrs._asdict())
    return kernel.results(*outputs)


def code(kernel: Interface, part: str, name: str) -> int:
    """The built kernel's own code of `name` in its vocabulary `part` (`kinds`, `walls`, `inlets`)."""
    entry = getattr(layout(kernel.name), part)[name]
    return entry[0] if isinstance(entry, tuple) else entry
