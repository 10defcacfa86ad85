"""Reading VTK files as ParaView writes them, with the `vtk` package, into flowkit fields."""

import functools
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from .. import _dtypes
from .._custom_types import Files
from ..fields.grid import GridField
from ..fields.locator import mesh_topology
from ..fields.mesh import MeshField
from ..fields.slices import sample_columns
from ..fields.streamed import SliceSource
from .checks import check_velocity
from .formats import format_of
from .solvers import Step
from .vtk_arrays import is_expression
from .vtk_slices import (
    Arrays,
    GridSlice,
    MeshSlice,
    file_time,
    grid_slice,
    is_grid,
    mesh_slice,
    read_dataset,
    series_slice,
)


def _series(path, velocity=None, skip_zero_time=True, steady=None):
    """[(item, time or None)] for a .pvd, a ParaView `.series` file, a glob pattern, a list of
    files, one file, or a solver's case (its time steps, items `formats.Step`)."""
    import glob

    if isinstance(path, (list, tuple)):
        return [(Path(p), None) for p in path]
    path = Path(path)
    fmt = format_of(path)
    if fmt.make_reader is not None and path.exists():
        case = fmt.open_case(path, velocity, skip_zero_time=skip_zero_time, steady=steady)
        return [(Step(case, k), t) for k, t in enumerate(case.times)]
    if path.suffix.lower() in (".pvd", ".series"):
        if not path.exists():
            raise FileNotFoundError(f"collection {path} does not exist")
        series = sorted(_pvd(path) if path.suffix.lower() == ".pvd" else _json_series(path), key=lambda item: item[1])
        missing = [str(f) for f, _ in series if not f.exists()]
        if missing:
            raise FileNotFoundError(f"{path}: {len(missing)} listed file(s) do not exist: {missing}")
        return series
    if any(ch in str(path) for ch in "*?["):
        files = sorted(glob.glob(str(path)))
        if not files:
            raise FileNotFoundError(f"no files match {path}")
        return [(Path(f), None) for f in files]
    return [(path, None)]


def _pvd(path: Path) -> list[tuple[Path, float]]:
    """The files and times a `.pvd` collection lists (one part per time step)."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as err:
        raise ValueError(f"{path}: not a valid .pvd collection ({err})") from None
    entries = root.findall("./Collection/DataSet")
    if not entries:
        raise ValueError(f"{path}: the collection lists no DataSet entries")
    parts = {e.get("part", "0") for e in entries}
    if len(parts) > 1:
        raise ValueError(
            f"{path}: {len(parts)} parts per time step; multi-part grids are not supported (merge them first)"
        )
    return [(path.parent / e.get("file"), float(e.get("timestep", "nan"))) for e in entries]


def _json_series(path: Path) -> list[tuple[Path, float]]:
    """The files and times of ParaView's JSON series file (`pitzDaily.vtm.series`, written by
    `foamToVTK` and ParaView): `{"file-series-version": "1.0", "files": [{"name", "time"}]}`."""
    import json

    try:
        entries = [(path.parent / str(e["name"]), float(e["time"])) for e in json.loads(path.read_text())["files"]]
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(
            f"{path}: not a ParaView series file ({type(err).__name__}: {err}); expected "
            '{"file-series-version": "1.0", "files": [{"name": ..., "time": ...}, ...]}'
        ) from None
    if not entries:
        raise ValueError(f"{path}: the series lists no files")
    return entries


def _series_times(path, file_times, times, n: int):
    """Times of the files: from the .pvd or TimeValue, else `times=`, else an error (never indices)."""
    if all(t is not None and np.isfinite(t) for t in file_times):
        return np.asarray(file_times, dtype=np.float64)
    if times is None:
        raise ValueError(
            f"{path}: the files carry no times (no .pvd timestep, no TimeValue field data); pass "
            "times=[...] with one time per file"
        )
    times = np.asarray(times, dtype=np.float64)
    if times.shape != (n,):
        raise ValueError(f"times: {times.size} values for {n} files")
    return times


def read_series(
    path: Files | Step | Sequence[Step],
    velocity: str | None = None,
    times=None,
    *,
    sample=None,
    cell_data: str = "points",
    allow_nonfinite: bool = False,
    dtype: DTypeLike = "float32",
    interpolation: str = "linear",
    periodic=False,
    stream: bool | None = None,
    max_device_bytes: int | None = None,
    skip_zero_time: bool = True,
    steady: bool | None = None,
    **mesh_options,
):
    """`fk.io.read` for VTK's own files and the solvers' outputs that the `vtk` package reads
    (see `fk.io.read` for the arguments): a `GridField` for image and rectilinear data, a
    `MeshField` for everything else, or a `StreamedField` of either."""
    import logging

    from ..fields.streamed import StreamedField, choose_streaming

    series = _series(path, velocity, skip_zero_time, steady)
    first = read_dataset(series[0][0])
    grid = is_grid(first)
    if grid and sample:
        raise ValueError(
            f"{path}: sample= is supported for meshes; for image/rectilinear data read the array as "
            "its own GridField (fk.io.read(path, velocity=NAME)) and use fk.analysis.sample"
        )
    if cell_data not in ("points", "constant"):
        raise ValueError(f"cell_data must be 'points' or 'constant', got {cell_data!r}")
    options = dict(velocity=velocity, allow_nonfinite=allow_nonfinite, sample=sample, cell_data=cell_data)
    read = (
        (lambda file, data: grid_slice(file, data, velocity, allow_nonfinite))
        if grid
        else functools.partial(mesh_slice, **options, later_files=len(series) > 1)
    )
    read_arrays = None if grid else functools.partial(series_slice, **options)
    files = _VtkFiles(path, series, first, read, read_arrays)
    del first
    ref = files.reference
    regions = None
    if isinstance(series[0][0], Step):
        case = series[0][0].case
        regions = case.regions()
        if not is_expression(ref.arrays.name):  # a name or components: the reader may skip the rest
            case.keep_arrays({*ref.arrays.name.split(","), *(sample or ())})
    logging.getLogger("flowkit").info(
        "read: velocity array %r from %d file(s) or time step(s) starting %s",
        ref.arrays.name,
        len(series),
        series[0][0],
    )

    def build(pieces, times, topology=None):  # the field of these slices (one piece and times None: steady)
        stack = (lambda arrays: np.stack(arrays)) if times is not None else (lambda arrays: arrays[0])  # noqa: E731
        values = stack([p.values for p in pieces])
        samples = (
            {} if isinstance(ref, GridSlice) else {n: stack([p.samples[n] for p in pieces]) for n in ref.arrays.samples}
        )
        pieces.clear()  # the slices are freed once stacked, and handed back before the field's device copy
        _release_freed_memory()
        if isinstance(ref, GridSlice):
            return GridField.from_arrays(values, ref.axes, times, periodic, interpolation, dtype)
        return MeshField.from_arrays(
            ref.points,
            ref.cells,
            values,
            ref.cell_types,
            times=times,
            samples=samples,
            dtype=dtype,
            cell_values=ref.arrays.on_cells,
            topology=topology,
            regions=regions,
            velocity_array=ref.arrays.name,
            **mesh_options,
        )

    if len(series) == 1:
        return build([ref.arrays], None)
    slice_bytes = sum(a.size for a in files.slice_arrays(ref.arrays).values()) * _dtypes.resolve(dtype).itemsize
    if choose_streaming(stream, len(series), slice_bytes, max_device_bytes, str(path)):
        files.resolve_times(times)
        return StreamedField(build([files.piece(0), files.piece(1)], files.times[:2]), files, max_device_bytes)
    later = files.pieces(range(1, len(series)), in_file_order=True)
    topology = (
        None
        if isinstance(ref, GridSlice)
        else mesh_topology(ref.points, ref.cells, ref.cell_types, mesh_options.get("bin_scale", 0.75))
    )  # while the threads read
    pieces = [ref.arrays, *later]
    pieces = [pieces[i] for i in files.resolve_times(times, [p.time for p in pieces])]
    del later  # it holds its reads' results: the slices are freed once stacked
    field = build(pieces, files.times, topology)
    _release_freed_memory()
    return field


def _release_freed_memory() -> None:
    """Hand the memory a series' reading freed back to the system (a collection, then glibc's
    `malloc_trim`): freed slices otherwise stay in the process's heap, and what the field's
    device copy and the run allocate next comes on top of them in its peak (0.3 GB on the
    brief's 40 files after the run, 0.04 GB at the device copy)."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc
        pass


class _VtkFiles(SliceSource):
    """The files of a VTK time series: each read (with the vtk package) into one slice's arrays
    and checked to hold the same grid or mesh as the first file."""

    def __init__(self, path, series, first, read, read_arrays=None):
        self.description = str(path)
        self.path = path
        self.files = [file for file, _ in series]
        self.listed_times = [t for _, t in series]
        self._read = read
        self.reference: GridSlice | MeshSlice = read(self.files[0], first)
        check_velocity(
            self.reference.arrays.values, str(self.files[0]), repr(self.reference.arrays.name), 0, self.listed_times[0]
        )
        self._read_arrays = read_arrays
        """For meshes: `(file, series) -> Arrays` reading only what changes in time."""
        self.times = None
        self._order = np.arange(len(self.files))

    def pieces(self, ks, in_file_order: bool = False) -> Iterator[Arrays]:
        """`piece(k)` for every `k`, in order: all are read ahead in threads from the call on
        (VTK's parsers release the GIL), so the caller can do other work meanwhile."""
        import os
        from concurrent.futures import ThreadPoolExecutor

        ks = list(ks)
        pool = ThreadPoolExecutor(max(1, min(len(os.sched_getaffinity(0)), len(ks))), thread_name_prefix="flowkit-read")
        futures = [pool.submit(self.piece, k, in_file_order) for k in ks]
        pool.shutdown(wait=False)  # the threads finish the queued reads, then exit
        return (future.result() for future in futures)

    def resolve_times(self, times=None, file_times=None) -> np.ndarray:
        """Set `times` (ascending) from the .pvd, the files' TimeValue or `times=`; return the
        order of the files by time. Without `file_times`, each file lacking a listed time is
        read once for its TimeValue (unless `times=` is given)."""
        if file_times is None:
            file_times = list(self.listed_times)
            if not all(t is not None and np.isfinite(t) for t in file_times) and times is None:
                file_times = [
                    t if t is not None and np.isfinite(t) else file_time(read_dataset(f))
                    for f, t in zip(self.files, file_times)
                ]
        else:
            file_times = [t if t is not None and np.isfinite(t) else f for t, f in zip(self.listed_times, file_times)]
        resolved = _series_times(self.path, file_times, times, len(self.files))
        self._order = np.argsort(resolved, kind="stable")
        self.times = resolved[self._order]
        same = np.flatnonzero(np.diff(self.times) == 0)
        if same.size:
            a, b = (self.files[int(self._order[k])] for k in (same[0], same[0] + 1))
            raise ValueError(
                f"{self.path}: {a} and {b} have the same time {self.times[same[0]]:g}; each file of a series needs "
                "its own (its .pvd timestep or TimeValue), or give times=[...]"
            )
        return self._order

    def piece(self, k: int, in_file_order: bool = False) -> Arrays:
        """The arrays of slice `k` (in time order, or file `k` with `in_file_order`), checked."""
        file = self.files[k if in_file_order else int(self._order[k])]
        ref, first = self.reference, self.files[0]
        if isinstance(ref, MeshSlice):
            arrays = self._read_arrays(file, ref.series)
        else:
            piece = self._read(file, read_dataset(file))  # a grid: its axes are cheap to check
            axes, arrays = piece.axes, piece.arrays
            if len(axes) != len(ref.axes) or any(
                a.shape != b.shape or not np.allclose(a, b) for a, b in zip(ref.axes, axes)
            ):
                raise ValueError(
                    f"{file}: its grid ({[len(a) for a in axes]} points) differs from {first} "
                    f"({[len(a) for a in ref.axes]}); moving or remeshed grids are not supported"
                )
        check_velocity(arrays.values, str(file), repr(ref.arrays.name), k, arrays.time)
        return arrays

    @staticmethod
    def slice_arrays(arrays: Arrays) -> dict:
        """The field's time leaves of one slice, by name."""
        out = {"values": arrays.values}
        if arrays.samples:
            out["sample_values"] = sample_columns(arrays.samples)
        return out

    def read(self, k: int) -> dict:
        return self.slice_arrays(self.piece(k))
