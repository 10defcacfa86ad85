"""Trajectories streamed to disk chunk by chunk, for runs whose frames do not fit in memory.

The store has the CF trajectory layout of `Trajectory.to_xarray` (dims `trajectory`, `obs`;
variables `x`, `y`(, `z`), `status`, `time`, `t_release`, `exit_time`(, `u`, `v`, `w`)), written
with `zarr` directly so that each chunk of frames goes to its own region of the arrays and is
never held with the others.
"""

from pathlib import Path

import numpy as np

from .._status import Status


class ZarrTrajectoryWriter:
    """Creates the store for `n` particles at `times` and writes regions of it."""

    def __init__(self, path, n: int, times, dim: int, dtype, t_release, with_velocity: bool, frames_per_chunk: int, with_generation: bool = False):
        import zarr

        self.path = Path(path)
        group = zarr.open_group(str(self.path), mode="w")
        group.attrs.update({"featureType": "trajectory", "Conventions": "CF-1.10", "source": "flowkit"})
        rows = int(min(n, 2**16))
        cols = int(max(1, min(len(times), frames_per_chunk)))

        def array(name, shape, chunks, kind, dims, attrs):
            created = group.create_array(name, shape=shape, chunks=chunks, dtype=kind, dimension_names=dims, fill_value=0)
            created.attrs.update(attrs)
            return created

        names = ["x", "y", "z"][:dim]
        standard = {"x": "projection_x_coordinate", "y": "projection_y_coordinate", "z": "height"}
        self._array = array
        self._shape, self._chunks = (n, len(times)), (rows, cols)
        self._dtype = dtype
        self.samples = {}
        self.positions = [array(name, (n, len(times)), (rows, cols), dtype, ["trajectory", "obs"], {"standard_name": standard[name], "units": "1"}) for name in names]
        self.status = array("status", (n, len(times)), (rows, cols), np.int8, ["trajectory", "obs"], {"flag_values": [s.value for s in Status], "flag_meanings": " ".join(s.name.lower() for s in Status)})
        self.generation = array("generation", (n, len(times)), (rows, cols), np.int32, ["trajectory", "obs"], {"comment": "restarts of the slot by an inlet; each generation is a separate path"}) if with_generation else None
        self.velocities = [array(name, (n, len(times)), (rows, cols), dtype, ["trajectory", "obs"], {"units": "1"}) for name in ["u", "v", "w"][:dim]] if with_velocity else []
        array("time", (len(times),), (len(times),), dtype, ["obs"], {"standard_name": "time", "units": "1"})[:] = np.asarray(times, dtype=dtype)
        array("trajectory", (n,), (rows,), np.int64, ["trajectory"], {"cf_role": "trajectory_id"})[:] = np.arange(n)
        array("t_release", (n,), (rows,), dtype, ["trajectory"], {"units": "1"})[:] = np.asarray(t_release)
        self.exit_time = array("exit_time", (n,), (rows,), dtype, ["trajectory"], {"units": "1", "comment": "inf: still active at the end"})

    def write_frames(self, frames: slice, particles: slice, positions, status, velocities=None, samples=None, generation=None) -> None:
        """Frames `frames` of particles `particles`: positions `(F, P, d)`, status `(F, P)`,
        velocities `(F, P, d)`, sampled arrays `{name: (F, P[, c])}`, generations `(F, P)`."""
        if self.generation is not None:
            self.generation[particles, frames] = np.asarray(generation).T
        for axis, target in enumerate(self.positions):
            target[particles, frames] = np.asarray(positions[..., axis]).T
        self.status[particles, frames] = np.asarray(status).T.astype(np.int8)
        for axis, target in enumerate(self.velocities):
            target[particles, frames] = np.asarray(velocities[..., axis]).T
        for name, values in (samples or {}).items():
            values = np.swapaxes(np.asarray(values), 0, 1)  # (P, F[, c])
            if name not in self.samples:
                extra = values.shape[2:]
                dims = ["trajectory", "obs"] + [f"{name}_component"] * len(extra)
                self.samples[name] = self._array(name, self._shape + extra, self._chunks + extra, self._dtype, dims, {"flowkit_role": "sample", "comment": "interpolated from the field; NaN outside its domain"})
            self.samples[name][particles, frames] = values

    def write_exit_time(self, particles: slice, exit_time) -> None:
        self.exit_time[particles] = np.asarray(exit_time)

    def open(self):
        """The finished store as a lazily loaded `xarray.Dataset`."""
        import xarray as xr

        return xr.open_dataset(self.path, engine="zarr", consolidated=False, chunks=None)
