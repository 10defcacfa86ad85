"""flowkit's compiled CPU kernels, XLA FFI handlers in one library: the mesh tracker's
(`mesh_chunk.cc`, `KERNELS` name `mesh`), the ocean tracker's (`ocean_chunk.cc`, `ocean`) and
the structured grids' (`grid_chunk.cc`, `grid`).

`pip install` builds it where a C++17 compiler is found; without it, or with the environment
variable `FLOWKIT_NATIVE=0` (for comparisons and debugging), runs take the JAX path, which
computes the same tracks. It is built three times from the same sources (`BUILDS`): for the
compiler's baseline (`_mesh_chunk`: 16-byte vectors on x86-64), with AVX2 (`_mesh_chunk_avx2`:
32-byte vectors) and with AVX-512 (`_mesh_chunk_avx512`: the same vectors, AVX-512's masks and
registers), none with FMA, so all round alike. A process loads the widest build the CPU runs,
or the one `FLOWKIT_NATIVE` names (`baseline`, `avx2`, `avx512`). A run's log says which path
and build it took. Each kernel declares its own layout (`layout(kernel)`): its buffers and
attributes by name, the cell kinds (and wall and inlet modes) it knows and its capacities;
`flowkit.tracker.seam`, the one place that calls them, checks that layout against Python's
declaration before registering the kernel's targets (`register`). The same library lists the
cells of each bin of a mesh's locator (`bin_cells`).
"""

import ctypes
import dataclasses
import functools
import importlib.machinery
import os
from pathlib import Path

KERNELS = ("mesh", "ocean", "grid")
"""The kernels the library holds, by name."""
BUILDS = ("baseline", "avx2", "avx512")
"""The library's builds, narrowest first (`_mesh_chunk`, `_mesh_chunk_avx2`, `_mesh_chunk_avx512`)."""
SWITCH = ("0", "1", *BUILDS)
"""The values `FLOWKIT_NATIVE` takes: off, on (the widest build the CPU runs), or one build."""
PRECISIONS = {"float32": "f32", "float64": "f64"}
"""The positions' precisions each kernel is built for, and their targets' suffixes."""


def target(kernel: str, dtype: str) -> str:
    """The FFI target of `kernel` for positions of `dtype` (`float32`, `float64`)."""
    return f"flowkit_{kernel}_chunk_{PRECISIONS[dtype]}"


def _symbol(kernel: str) -> str:
    """The library's prefix of `kernel`'s handlers and layout: `FlowkitMeshChunk`."""
    return f"Flowkit{kernel.capitalize()}Chunk"


@dataclasses.dataclass(frozen=True)
class Layout:
    """What the built kernel declares (`FlowkitMeshChunkLayout()`)."""

    inputs: tuple[tuple[str, str], ...]
    """`(name, element)` of each input buffer in call order; element `real` (the positions'
    precision) or `s32`."""
    results: tuple[tuple[str, str], ...]
    attrs: tuple[tuple[str, str], ...]
    """`(name, C++ type)` of each attribute, read by name."""
    kinds: dict[str, tuple[int, int]]
    """3-D cell kind name -> `(code, node count)`."""
    walls: dict[str, int]
    """What an end outside the mesh meets (`open` or a `MeshWalls` mode) -> code."""
    inlets: dict[str, int]
    """How an `InletOutlet` starts a row again (`none` or its mode) -> code."""
    capacity: dict[str, int]
    """Sizes the kernel holds: `map_columns`, `tableau_rows`, `face_row`."""
    columns: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    """A table of rows (`forcing_ints`) -> the names of its columns, in the row's order."""
    drifts: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)
    """The drifts it adds to the current (`drift_rules.h`: `windage`) -> `(code, count of numbers)`."""

    def row(self, table: str, values: dict) -> list:
        """The row of `table` holding `values` by column name, in the kernel's order.

        **Raises:** `RuntimeError` where `values` names other columns than the kernel's (the
        kernel was built from another layout: rebuild it)."""
        columns = self.columns.get(table, ())
        if set(columns) != set(values):
            raise RuntimeError(
                f"flowkit's CPU kernel reads the columns {list(columns)} of {table}, Python writes {sorted(values)} "
                "(rebuild it: pip install -e .)"
            )
        return [values[name] for name in columns]

    @classmethod
    def parse(cls, text: str) -> "Layout":
        lines = [line.split() for line in text.splitlines() if line.strip()]
        of = lambda tag: [words[1:] for words in lines if words[0] == tag]  # noqa: E731
        return cls(
            inputs=tuple((name, element) for name, element in of("input")),
            results=tuple((name, element) for name, element in of("result")),
            attrs=tuple((name, kind) for name, kind in of("attr")),
            kinds={name: (int(code), int(nodes)) for name, code, nodes in of("kind")},
            walls={name: int(code) for name, code in of("walls")},
            inlets={name: int(code) for name, code in of("inlet")},
            capacity={name: int(value) for name, value in of("capacity")},
            columns={table: tuple(name for t, name in of("column") if t == table) for table, _ in of("column")},
            drifts={name: (int(code), int(numbers)) for name, code, numbers in of("drift")},
        )


def _load(build: str) -> ctypes.CDLL | None:
    """The library's `build` (one of `BUILDS`), or None where it is not built."""
    folder, name = Path(__file__).parent, "_mesh_chunk" if build == "baseline" else f"_mesh_chunk_{build}"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"{name}{suffix}"
        if path.exists():
            return ctypes.CDLL(str(path))
    return None


def _switch() -> str:
    """`FLOWKIT_NATIVE` (default `1`), checked."""
    value = os.environ.get("FLOWKIT_NATIVE", "1")
    if value not in SWITCH:
        raise ValueError(f"FLOWKIT_NATIVE={value!r}: expected one of {', '.join(SWITCH)}")
    return value


@functools.cache
def cpu_runs() -> tuple[str, ...]:
    """The builds of `BUILDS` this CPU runs, narrowest first (the baseline build asks the CPU;
    built or not); `()` where the baseline is not built."""
    baseline = _load("baseline")
    if baseline is None:
        return ()
    wide = {"avx2": baseline.FlowkitCpuHasAvx2(), "avx512": baseline.FlowkitCpuHasAvx512()}
    return ("baseline", *(build for build, runs in wide.items() if runs))


@functools.cache
def _loaded() -> tuple[str, ctypes.CDLL] | None:
    """`(build, library)` this process runs: the one `FLOWKIT_NATIVE` names, else the widest
    build that is built and that the CPU runs; None if the baseline is unbuilt. A named build
    the CPU does not run, or that is not built, is an error."""
    runs, asked = cpu_runs(), _switch()
    if not runs:
        return None
    if asked in BUILDS:
        if asked not in runs:
            raise RuntimeError(f"FLOWKIT_NATIVE={asked}: this CPU does not run that build (it runs {', '.join(runs)})")
        library = _load(asked)
        if library is None:
            raise RuntimeError(f"FLOWKIT_NATIVE={asked}: that build was not made (see the install's output)")
        return asked, library
    return next((build, library) for build in reversed(runs) if (library := _load(build)) is not None)


def _library() -> ctypes.CDLL | None:
    """The library this process runs (`_loaded`), or None if unbuilt."""
    loaded = _loaded()
    return None if loaded is None else loaded[1]


def build() -> str:
    """The name of the build this process runs, one of `BUILDS` (`built()` must hold)."""
    loaded = _loaded()
    assert loaded is not None, "flowkit.native.build: the kernel is not built"
    return loaded[0]


def simd_bytes() -> int:
    """The width in bytes of the loaded build's vectors (`built()` must hold): 16 or 32."""
    library = _library()
    assert library is not None, "flowkit.native.simd_bytes: the kernel is not built"
    return int(library.FlowkitSimdBytes())


def built() -> bool:
    """Whether the kernel is built and switched on (`FLOWKIT_NATIVE` is not `0`)."""
    return _switch() != "0" and _library() is not None


@functools.cache
def layout(kernel: str = "mesh") -> Layout:
    """The built `kernel`'s declared layout (`built()` must hold)."""
    library = _library()
    assert library is not None, "flowkit.native.layout: the kernels are not built"
    declared = getattr(library, f"{_symbol(kernel)}Layout")
    declared.restype = ctypes.c_char_p
    return Layout.parse(declared().decode())


@functools.cache
def register(kernel: str) -> None:
    """Register `kernel`'s FFI targets of both precisions on the CPU (once)."""
    import jax

    library = _library()
    assert library is not None, "flowkit.native.register: the kernels are not built"
    for dtype, suffix in PRECISIONS.items():
        handler = getattr(library, f"{_symbol(kernel)}{suffix.upper()}")
        jax.ffi.register_ffi_target(target(kernel, dtype), jax.ffi.pycapsule(handler), platform="cpu")


def bin_cells(lo, hi, origin, size, rows, shape):
    """`(start, cells)` of a uniform grid of bins (`size` from `origin`, `shape`): each of the
    cells `rows` listed, ascending, in every bin its box `lo`..`hi` reaches, by the kernel's
    library (`FlowkitBinCells`, one pass over the cells). `flowkit.fields.locator.bin_grid`'s
    tables; `None` when the kernel is not `built()` (the caller builds them in NumPy)."""
    if not built():
        return None
    import numpy as np

    call = _library().FlowkitBinCells
    call.restype = ctypes.c_int64
    arrays = [np.ascontiguousarray(a, np.float64) for a in (lo, hi, origin, size)]
    rows, shape = np.ascontiguousarray(rows, np.int32), np.ascontiguousarray(shape, np.int64)
    start = np.zeros(int(np.prod(shape)) + 1, np.int64)
    head = [*map(_pointer, arrays), _pointer(rows), ctypes.c_int64(len(rows)), ctypes.c_int32(len(shape))]
    cells = np.empty(call(*head, _pointer(shape), _pointer(start), None), np.int32)
    call(*head, _pointer(shape), _pointer(start), _pointer(cells))
    return start, cells


def cell_boxes(points, nodes):
    """`flowkit.fields.locator.cell_boxes` by the kernel's library; None when not `built()`."""
    return _per_cell("FlowkitCellBoxes", points, nodes, points.shape[1], points.shape[1])


def simplex_maps(points, nodes):
    """`flowkit.fields.locator.simplex_maps` by the kernel's library, the same arithmetic;
    None when not `built()`."""
    dim = points.shape[1]
    maps = _per_cell("FlowkitSimplexMaps", points, nodes, dim + dim * dim)
    return None if maps is None else maps[0]


def simplex_measures(points, nodes):
    """The measures (`flowkit.fields.locator.cell_measures`) of cells that are one simplex
    each, by the kernel's library; None when not `built()`."""
    measure = _per_cell("FlowkitSimplexMeasures", points, nodes, 1)
    return None if measure is None else measure[0][:, 0]


def _per_cell(symbol: str, points, nodes, *columns: int):
    """Call the library's per-cell `symbol` on `points` and `nodes`, with one `(C, columns)`
    float64 output per entry of `columns`; the outputs, or None when not `built()`."""
    if not built():
        return None
    import numpy as np

    call = getattr(_library(), symbol)
    call.restype = None
    points, nodes = np.ascontiguousarray(points, np.float64), np.ascontiguousarray(nodes, np.int64)
    outputs = [np.empty((len(nodes), n)) for n in columns]
    sizes = (ctypes.c_int64(len(nodes)), ctypes.c_int32(nodes.shape[1]), ctypes.c_int32(points.shape[1]))
    call(_pointer(points), _pointer(nodes), *sizes, *map(_pointer, outputs))
    return outputs


def _pointer(array) -> ctypes.c_void_p:
    """A contiguous NumPy array's data, as the library's functions take it."""
    return array.ctypes.data_as(ctypes.c_void_p)
