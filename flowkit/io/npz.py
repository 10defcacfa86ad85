"""Gridded velocity fields as `.npz` files.

Layout: `velocity` with shape `(nx, ny[, nz], dim)` or `(nt, nx, ny[, nz], dim)`, one
coordinate array per axis named `x`, `y` (, `z`), optional `time` (for a time series) and
optional `periodic` (per axis the period, 0 where not periodic; or a bool per axis).
"""

import math
import zipfile
from pathlib import Path

import numpy as np
from jax.typing import DTypeLike

from .._custom_types import PathLike
from .._dtypes import resolve
from .._paths import open_npz, refuse_special
from ..fields.grid import GridField
from ..fields.streamed import SliceSource, StreamedField

_AXES = ("x", "y", "z")


def _periodic(stored: np.ndarray) -> tuple:
    """Per axis `False` or the period (or `True`, from files that stored flags)."""
    if stored.dtype == bool:
        return tuple(bool(p) for p in stored)
    return tuple(float(p) if p > 0 else False for p in stored)


def save_grid_npz(path: PathLike, field: GridField) -> Path:
    """Write `field`'s data and axes to `path` in the layout above."""
    path = Path(path)
    values = np.asarray(field.values)
    arrays = {name: np.asarray(ax) for name, ax in zip(_AXES, field.axes)}
    if field.times is None:
        arrays["velocity"] = values[0]
    else:
        arrays["velocity"] = values
        arrays["time"] = np.asarray(field.times)
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    arrays["periodic"] = np.where(field.periodic, hi - lo, 0.0)  # the periods, so a load takes them as stated
    np.savez(path, **arrays)
    return path


def load_grid_npz(
    path: PathLike,
    dtype: DTypeLike = "float32",
    interpolation: str = "linear",
    periodic=None,
    *,
    stream: bool | None = None,
    max_device_bytes: int | None = None,
) -> GridField | StreamedField:
    """Read a `GridField` from an `.npz` file; errors name the file and the missing array.

    A time series is returned as a `fk.io.StreamedField` (read one time slice at a time, in
    windows, by `fk.track`) with `stream=True`, or by default when it would exceed
    `max_device_bytes` (see `fk.io.read_vtk`). Streaming reads slices straight from the archive,
    fastest when it is stored uncompressed (`np.savez`, not `np.savez_compressed`)."""
    from ..fields.streamed import StreamedField, choose_streaming

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"grid field file {path} does not exist")
    refuse_special(path, "grid field file ")
    with open_npz(path, "grid field file") as data:
        if "velocity" not in data:
            raise ValueError(f"{path}: expected an array named 'velocity', found {sorted(data.files)}")
        source = _NpzSlices(path, data["time"] if "time" in data else None)
        dim = source.shape[-1]
        if dim not in (2, 3):
            raise ValueError(f"{path}: 'velocity' must end in 2 or 3 components, got shape {source.shape}")
        missing = [name for name in _AXES[:dim] if name not in data]
        if missing:
            raise ValueError(f"{path}: a {dim}-D field needs coordinate arrays {list(_AXES[:dim])}; missing {missing}")
        axes = [data[name] for name in _AXES[:dim]]
        if periodic is None:
            periodic = _periodic(data["periodic"]) if "periodic" in data else False
        streamed = source.times is not None and choose_streaming(
            stream, source.shape[0], math.prod(source.shape[1:]) * resolve(dtype).itemsize, max_device_bytes, str(path)
        )
        try:
            if streamed:
                template = GridField.from_arrays(
                    np.stack([source.read(0)["values"], source.read(1)["values"]]),
                    axes,
                    times=source.times[:2],
                    periodic=periodic,
                    interpolation=interpolation,
                    dtype=dtype,
                )
                return StreamedField(template, source, max_device_bytes)
            return GridField.from_arrays(
                data["velocity"], axes, times=source.times, periodic=periodic, interpolation=interpolation, dtype=dtype
            )
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None


class _NpzSlices(SliceSource):
    """The `velocity` array of an `.npz` archive, read one time slice (leading index) at a time
    without loading the rest: the member's `.npy` header gives shape and dtype, a seek the slice
    (direct in a stored archive; a compressed one decompresses up to it)."""

    def __init__(self, path: Path, times):
        self.description = str(path)
        self.path = path
        self.files = [path]
        self.times = None if times is None else np.asarray(times, np.float64)
        with zipfile.ZipFile(path) as archive, archive.open("velocity.npy") as member:
            version = np.lib.format.read_magic(member)
            header = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(
                version
            )
            if header is None:
                raise ValueError(f"{path}: 'velocity' uses .npy format version {version}; rewrite it with np.savez")
            self.shape, fortran, self.dtype = header(member)
            self._offset = member.tell()
        if fortran and self.times is not None:
            raise ValueError(
                f"{path}: 'velocity' is stored in Fortran order, so its time slices are not contiguous; "
                "save np.ascontiguousarray(velocity)"
            )
        self._slice_bytes = math.prod(self.shape[1:]) * self.dtype.itemsize

    def read(self, k: int) -> dict:
        with zipfile.ZipFile(self.path) as archive, archive.open("velocity.npy") as member:
            member.seek(self._offset + k * self._slice_bytes)
            raw = member.read(self._slice_bytes)
        return {"values": np.frombuffer(raw, self.dtype).reshape(self.shape[1:])}
