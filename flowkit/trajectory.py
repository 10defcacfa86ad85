"""The result of a tracking run: saved times, positions and per-particle status."""

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import equinox as eqx
import numpy as np
from jaxtyping import Float, Int

from ._custom_types import HostOrDevice, PathLike
from ._status import Status, status_counts


class Frame(eqx.Module):
    """One or more saved frames of a batch of particles, as the compiled chunk returns them and
    the sinks take them (leading axes `(F, P)`, or `(P,)` for a single frame)."""

    positions: Float[Any, "... dim"]
    status: Int[Any, "..."]
    velocities: Float[Any, "... dim"] | None
    """Field velocity at each position (zero where not active); None unless recorded."""
    samples: dict
    """The field's sampled arrays `{name: (..., [c])}` (NaN outside its domain)."""
    generation: Int[Any, "..."] | None
    """Restarts of each slot by an inlet; None without restarting boundaries."""
    variables: dict
    """A particle model's variables `{name: (..., [c])}` (its velocity, age, ...); empty for tracers."""


@dataclasses.dataclass(frozen=True)
class RunStats:
    """What a `track` run measured and counted: `Trajectory.stats`."""

    n_particles: int
    n_steps: int
    n_saves: int
    dtype: str
    device: str
    n_devices: int
    compile_s: float
    run_s: float
    lost_releases: int = 0
    """Releases of a `ContinuousInlet` that found no free slot (give it more `slots`)."""
    warmup_s: float = 0.0
    """Time of the untimed warm-up chunk (`warmup=True`), apart from `compile_s` and `run_s`."""
    window_slices: int = 0
    """Streamed fields: time slices per window on the device (0: the whole series is resident)."""
    slices_read: int = 0
    """Streamed fields: slices read from disk (each at most once per window it enters)."""
    load_s: float = 0.0
    """Streamed fields: time the background thread spent reading and uploading windows."""
    first_window_s: float = 0.0
    """Streamed fields: time to read the first window, before anything runs to hide it behind."""
    load_wait_s: float = 0.0
    """Streamed fields: time the run waited for later windows (the part of their loading that
    computing the previous chunk did not hide)."""
    courant: float | None = None
    """The largest Courant number `max_i |dx_i| / size_i` (the cells a step crossed) of the
    active particles' last step before each saved frame (None for fields without cells:
    closed-form flows)."""

    @property
    def particle_steps_per_s(self) -> float:
        return self.n_particles * self.n_steps / self.run_s if self.run_s > 0 else float("nan")


TrajectoryWriter = Callable[..., Path]
"""`writer(trajectory, path, *, spherical, overwrite) -> path`: a format `Trajectory.save`
writes by the path's suffix, implemented where that format's library is used."""

WRITERS: dict[str, TrajectoryWriter] = {}
"""Suffix -> writer, filled by the module that implements it (`flowkit.io.vtk`: `.vtp`, `.pvd`),
so that nothing here imports io."""


class Trajectory(eqx.Module):
    """Particle tracks at the saved times, kept on the host as NumPy arrays (JAX arrays from a traced run).

    **Attributes:**

    - `times`: `(T,)` saved times; `t0` first, `t1` last.
    - `positions`: `(T, N, dim)`; a stopped particle keeps its last position.
    - `status`: `(T, N)` `flowkit.Status` codes (0 = active).
    - `velocities`: `(T, N, dim)` field velocity at the saved positions (zero where a particle is
      not active), or None unless `record_velocity=True`.
    - `t_release`: `(N,)` release times.
    - `exit_time`: `(N,)` when each particle stopped being active (left the domain, was
      absorbed, met a non-finite velocity, ...): the end of the step in which it stopped, or the
      exact crossing time where an integrator locates it (`Diffrax(exit_event=True)`);
      `+inf` (`-inf` when tracking backward) for particles still active at the end.
    - `samples`: `{name: (T, N[, c])}` further arrays of the field (pressure, temperature, ...
      loaded with `read_vtk(..., sample=[...])`) interpolated at the saved positions; NaN outside
      the domain. None when the field carries none.
    - `generation`: `(T, N)` how many times each slot has been restarted by an inlet
      (`fk.InletOutlet`, `fk.ContinuousInlet`); each generation is a separate path with its own
      `particle_id`. None for runs without restarts. `exit_time` then refers to a slot's last path.
    - `variables`: `{name: (T, N[, c])}` what a particle model carries (`velocity` of inertial
      particles, `age`, ...), at the saved times; None for tracers.
    - `statistics`: `{name: xarray.Dataset}` the statistics gathered inside the run
      (`track(..., statistics=[...])`, `flowkit.statistics`); None without.
    """

    times: Float[HostOrDevice, " T"]
    positions: Float[HostOrDevice, "T N dim"]
    status: Int[HostOrDevice, "T N"]
    t_release: Float[HostOrDevice, " N"]
    exit_time: Float[HostOrDevice, " N"]
    velocities: Float[HostOrDevice, "T N dim"] | None = None
    samples: dict | None = None
    generation: Int[HostOrDevice, "T N"] | None = None
    stats: RunStats | None = None
    variables: dict | None = None
    statistics: dict | None = None

    @property
    def active(self) -> HostOrDevice:
        """`(T, N)` mask of particles that are released and moving."""
        return self.status == Status.ACTIVE

    @property
    def n_particles(self) -> int:
        return self.positions.shape[1]

    @property
    def particle_id(self) -> np.ndarray:
        """`(T, N)` id of the path each slot follows at each frame: `slot + generation × N`, so a
        restarted slot starts a new path (without restarts: the slot index)."""
        n = self.n_particles
        slot = np.arange(n, dtype=np.int64)
        if self.generation is None:
            return np.broadcast_to(slot, self.status.shape)
        return slot + np.asarray(self.generation, np.int64) * n

    def status_counts(self, frame: int = -1) -> dict[str, int]:
        """Number of particles per status at one saved frame (the last by default)."""
        return status_counts(self.status[frame])

    def save(self, path: PathLike, spherical: bool = False, time_origin=None, overwrite: bool = False) -> Path:
        """Write `.npz` (arrays `times`, `positions`, `status`, `t_release`, `exit_time`
        [+ `velocities`]), `.zarr` / `.nc` in the CF trajectory layout (`to_xarray`), `.vtp`
        pathlines or a `.pvd` series of particle clouds for ParaView.

        An existing `path` is refused unless `overwrite`. Files are written under a temporary
        name and renamed when whole, so a failed write (a full disk, a kill) leaves no partial
        file and any earlier one unchanged; the failure is one `OSError` line naming `path`."""
        from ._files import written

        path = Path(path)
        if path.suffix not in (".npz", ".zarr", ".nc", ".vtp", ".pvd"):
            raise ValueError(f"Trajectory.save: {path} must end in .npz, .zarr, .nc, .vtp or .pvd")
        if path.suffix in WRITERS:  # VTK's formats, written by flowkit.io
            return WRITERS[path.suffix](self, path, spherical=spherical, overwrite=overwrite)
        with written(path, overwrite) as temporary:
            if path.suffix == ".zarr":
                self.to_xarray(spherical, time_origin).to_zarr(temporary, mode="w", consolidated=False)
            elif (
                path.suffix == ".nc"
            ):  # made in memory, then written as plain bytes: no HDF5 handle is left open on a failed write
                temporary.write_bytes(self.to_xarray(spherical, time_origin).to_netcdf(engine="h5netcdf"))
            else:
                np.savez(temporary, **self._arrays())
        return path

    def _arrays(self) -> dict:
        """The `.npz` layout: one array per attribute, samples and variables prefixed."""
        arrays = {
            "times": self.times,
            "positions": self.positions,
            "status": self.status,
            "t_release": self.t_release,
            "exit_time": self.exit_time,
        }
        if self.velocities is not None:
            arrays["velocities"] = self.velocities
        for name, values in (self.samples or {}).items():
            arrays[f"sample__{name}"] = values
        for name, values in (self.variables or {}).items():
            arrays[f"particle__{name}"] = values
        if self.generation is not None:
            arrays["generation"] = self.generation
        return arrays

    @classmethod
    def load(cls, path: PathLike, partial: bool = False) -> "Trajectory":
        """Read a trajectory written by `save` (.npz, .zarr or .nc) or streamed by `fk.track`
        (`output=`, with the statistics the run gathered). A streamed store whose run did not
        finish is refused, saying how much it holds; `partial=True` returns the particles of
        its finished batches."""
        path = Path(path)
        if path.suffix in (".zarr", ".nc"):
            import xarray as xr

            from ._store import read_dataset, unfinished

            if path.suffix == ".zarr":
                _check_chunks(path)
            opened = (
                xr.open_zarr(path, consolidated=False, decode_times=False)
                if path.suffix == ".zarr"
                else xr.open_dataset(path, decode_times=False)
            )
            with opened as ds:
                progress = unfinished(ds.attrs, ds.sizes["trajectory"])
                if progress is not None:
                    done, total, kept = progress
                    if not partial:
                        raise ValueError(
                            f"{path} is partial: its run stopped with {done} of {total} batches written ({kept} of "
                            f"{ds.sizes['trajectory']} particles); Trajectory.load(path, partial=True) returns those, "
                            "fk.track(..., output=path, resume=True) finishes the run"
                        )
                    ds = ds.isel(trajectory=slice(0, kept))
                statistics = {
                    name: read_dataset(path, f"statistics/{name}") for name in ds.attrs.get("flowkit_statistics", ())
                }
                return dataclasses.replace(cls.from_xarray(ds.load()), statistics=statistics or None)
        with np.load(path) as data:
            missing = {"times", "positions", "status"} - set(data.files)
            if missing:
                raise ValueError(f"{path}: not a flowkit trajectory file, missing arrays {sorted(missing)}")
            n = data["positions"].shape[1]
            t_release = data["t_release"] if "t_release" in data else np.full(n, data["times"][0])
            velocities = data["velocities"] if "velocities" in data else None
            exit_time = data["exit_time"] if "exit_time" in data else np.full(n, np.inf)
            samples = {key[len("sample__") :]: data[key] for key in data.files if key.startswith("sample__")}
            generation = data["generation"] if "generation" in data else None
            variables = {key[len("particle__") :]: data[key] for key in data.files if key.startswith("particle__")}
            return cls(
                data["times"],
                data["positions"],
                data["status"],
                t_release,
                exit_time,
                velocities,
                samples or None,
                generation,
                variables=variables or None,
            )

    @classmethod
    def from_xarray(cls, ds) -> "Trajectory":
        """Rebuild a trajectory from the CF layout written by `to_xarray`. Dated times (written
        with a field's `time_origin`, decoded or not) come back as seconds since that origin."""
        names = [n for n in (("lon", "lat", "z") if "lon" in ds else ("x", "y", "z")) if n in ds]
        positions = np.stack([ds[n].values.T for n in names], axis=-1)
        velocities = np.stack([ds[n].values.T for n in ("u", "v", "w")[: len(names)]], axis=-1) if "u" in ds else None
        if (
            velocities is not None and "lon" in ds and ds["u"].attrs.get("units") == "m s-1"
        ):  # back to degrees per second
            velocities = _to_degrees_per_second(velocities, positions)

        def role(kind):
            return {
                name: np.swapaxes(ds[name].values, 0, 1)
                for name in ds.data_vars
                if ds[name].attrs.get("flowkit_role") == kind
            }

        samples, variables = role("sample"), {name.removeprefix("particle_"): a for name, a in role("particle").items()}
        generation = ds["generation"].values.T if "generation" in ds else None
        seconds = _seconds_of(ds)
        exit_time = seconds(ds["exit_time"].values)
        exit_time = np.where(np.isnan(exit_time), np.inf, exit_time) if "flowkit_time_origin" in ds.attrs else exit_time
        return cls(
            seconds(ds["time"].values),
            positions,
            ds["status"].values.T,
            seconds(ds["t_release"].values),
            exit_time,
            velocities,
            samples or None,
            generation,
            variables=variables or None,
        )

    def to_xarray(self, spherical: bool = False, time_origin=None):
        """An `xarray.Dataset` in the CF trajectory layout (dims `trajectory`, `obs`).

        Positions are variables `x`, `y`(, `z`), or `lon`, `lat`(, `z`) in degrees with
        `spherical=True` (for fields from `from_xarray` on lon/lat grids). With the field's
        `time_origin`, `time`, `t_release` and `exit_time` are dates: numbers in the input's own
        units and calendar, which xarray and every CF reader decode.
        """
        import xarray as xr

        positions = _POSITIONS[bool(spherical)][: self.positions.shape[-1]]
        data_vars: dict[str, tuple] = {
            name: (_PER_FRAME, self.positions[..., i].T, attrs) for i, (name, attrs) in enumerate(positions)
        }
        flags = np.array([s.value for s in Status], np.int8), " ".join(s.name.lower() for s in Status)
        data_vars["status"] = (_PER_FRAME, self.status.T, {"flag_values": flags[0], "flag_meanings": flags[1]})
        data_vars["t_release"] = (("trajectory",), self.t_release, {"units": "1"})
        data_vars["exit_time"] = (
            ("trajectory",),
            self.exit_time,
            {"units": "1", "comment": "inf: still active at the end"},
        )
        if self.velocities is not None:
            for name, values, attrs in _velocity_variables(self.velocities, self.positions, bool(spherical)):
                data_vars[name] = (_PER_FRAME, values.T, attrs)
        roles = (
            ("sample", "", self.samples, "interpolated from the field; NaN outside its domain"),
            ("particle", "particle_", self.variables, "carried by the particle model"),
        )
        for role, prefix, arrays, comment in roles:
            for name, values in (arrays or {}).items():
                dims = _PER_FRAME + (f"{prefix}{name}_component",) * (values.ndim - 2)
                data_vars[prefix + name] = (dims, np.swapaxes(values, 0, 1), {"flowkit_role": role, "comment": comment})
        if self.generation is not None:
            data_vars["generation"] = (
                ("trajectory", "obs"),
                np.asarray(self.generation).T,
                {"comment": "restarts of the slot by an inlet; each generation is a separate path"},
            )
            data_vars["particle_id"] = (
                ("trajectory", "obs"),
                self.particle_id.T,
                {"comment": "id of the path: slot + generation * n_slots"},
            )
        time = (("obs",), self.times, {"standard_name": "time", "units": "1"})
        attrs = {}
        if time_origin is not None:
            dated = {"units": time_origin.units, "calendar": time_origin.calendar}
            time = (("obs",), time_origin.in_units(self.times), {"standard_name": "time", **dated})
            data_vars["t_release"] = (("trajectory",), time_origin.in_units(self.t_release), dated)
            finite = np.isfinite(self.exit_time)
            data_vars["exit_time"] = (
                ("trajectory",),
                np.where(finite, time_origin.in_units(np.where(finite, self.exit_time, 0.0)), np.nan),
                {**dated, "comment": "NaN: still active at the end"},
            )
            attrs = {"flowkit_time_origin": time_origin.date}
        coords = {
            "time": time,
            "trajectory": (("trajectory",), np.arange(self.n_particles), {"cf_role": "trajectory_id"}),
        }
        return xr.Dataset(
            data_vars,
            coords=coords,
            attrs={"featureType": "trajectory", "Conventions": "CF-1.10", "source": "flowkit", **attrs},
        )


_PER_FRAME = ("trajectory", "obs")


def _velocity_variables(velocities, positions, spherical: bool):
    """`(name, (T, N) values, attrs)` of the recorded velocity: on a sphere eastward and
    northward in m/s (the degrees per second the tracker steps in, at each particle's latitude)
    and the depth rate in m/s positive down; else in the positions' units per second."""
    from .fields.grid import metres_per_second

    velocities = np.asarray(velocities, np.float64)
    names = ("u", "v", "w")[: velocities.shape[-1]]
    if not spherical:
        return [
            (n, velocities[..., i], {"units": "1", "comment": "position units per second"}) for i, n in enumerate(names)
        ]
    metres = metres_per_second(velocities, np.asarray(positions)[..., 1])
    out = [
        ("u", metres[..., 0], {"standard_name": "eastward_sea_water_velocity", "units": "m s-1"}),
        ("v", metres[..., 1], {"standard_name": "northward_sea_water_velocity", "units": "m s-1"}),
    ]
    if len(names) > 2:
        out.append(("w", velocities[..., 2], {"long_name": "depth rate (positive down)", "units": "m s-1"}))
    return out


def _to_degrees_per_second(velocities: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """`_velocity_variables`' m/s on a sphere back to the degrees per second the tracker steps in."""
    from .fields.grid import EARTH_RADIUS

    degrees = np.array(velocities, np.float64)
    degrees[..., :2] /= np.pi / 180 * EARTH_RADIUS
    degrees[..., 0] /= np.cos(np.deg2rad(positions[..., 1]))
    return degrees.astype(np.asarray(velocities).dtype)


_POSITIONS = {
    False: (
        ("x", {"standard_name": "projection_x_coordinate", "units": "1"}),
        ("y", {"standard_name": "projection_y_coordinate", "units": "1"}),
        ("z", {"standard_name": "height", "units": "1"}),
    ),
    True: (
        ("lon", {"standard_name": "longitude", "units": "degrees_east"}),
        ("lat", {"standard_name": "latitude", "units": "degrees_north"}),
        ("z", {"standard_name": "depth", "units": "m", "positive": "down"}),
    ),
}
"""The position variables of `Trajectory.to_xarray`: Cartesian, or on a sphere."""


def _seconds_of(ds):
    """How `from_xarray` turns the dataset's times into seconds: as they are, or for dated
    trajectories (the `flowkit_time_origin` attribute) from their units or decoded dates."""
    origin = ds.attrs.get("flowkit_time_origin")
    if origin is None:
        return lambda values: np.asarray(values)
    from ._time import TimeOrigin

    time = ds["time"]
    units = time.attrs.get("units") or time.encoding.get("units")
    calendar = time.attrs.get("calendar") or time.encoding.get("calendar", "standard")
    dated = TimeOrigin(origin, units, calendar)

    def seconds(values):
        values = np.asarray(values)
        if np.issubdtype(values.dtype, np.datetime64):
            return (values - np.datetime64(origin)) / np.timedelta64(1, "s")
        if values.dtype == object:
            return np.array([np.nan if v is None else dated.seconds(v) for v in values.ravel()]).reshape(values.shape)
        return dated.from_units(values)

    return seconds


def _check_chunks(path: Path) -> None:
    """A streamed store is refused when a chunk file of its written batches is missing (it would
    read as NaN positions and unwritten statuses): zarr's listing of the store against the
    chunks those batches wrote."""
    import zarr

    from ._store import missing_chunks

    if not path.is_dir():
        raise ValueError(f"{path}: a file, not a zarr store (a folder)")
    try:
        group = zarr.open_group(str(path), mode="r")
    except (ValueError, OSError, KeyError, TypeError) as err:  # no zarr.json, or a damaged one
        raise ValueError(f"{path}: not a readable zarr store ({type(err).__name__}: {err})") from None
    if "flowkit_batches" not in group.attrs:
        return  # not streamed by fk.track (Trajectory.save wrote it)
    missing = missing_chunks(group)
    if missing:
        raise ValueError(
            f"{path} is damaged: {len(missing)} chunk file(s) of its written batches are missing "
            f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); its data cannot be read whole: "
            "run the job again (overwrite=True)"
        )
