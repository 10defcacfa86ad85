"""CF metadata: which variables are the velocity, which dimensions are which axes, and where each
component's values sit in a field's table (A-grid, C-grid or curvilinear)."""

import functools
import logging
import re
from collections.abc import Hashable, Sequence

import numpy as np

_log = logging.getLogger("flowkit")

STANDARD = {
    "u": (
        "eastward_sea_water_velocity",
        "surface_eastward_sea_water_velocity",
        "eastward_sea_water_velocity_assuming_no_tide",
        "sea_water_x_velocity",
        "eastward_wind",
        "x_wind",
        "x_sea_water_velocity",
        "surface_geostrophic_eastward_sea_water_velocity",
    ),
    "v": (
        "northward_sea_water_velocity",
        "surface_northward_sea_water_velocity",
        "northward_sea_water_velocity_assuming_no_tide",
        "sea_water_y_velocity",
        "northward_wind",
        "y_wind",
        "y_sea_water_velocity",
        "surface_geostrophic_northward_sea_water_velocity",
    ),
    "w": ("upward_sea_water_velocity", "upward_air_velocity", "sea_water_z_velocity"),
}
GRID_RELATIVE = ("x_wind", "x_sea_water_velocity", "sea_water_x_velocity")
"""Standard names of components along a projected grid's x axis (CF), not eastward."""
NAMES = {
    "u": ("u", "uo", "water_u", "uvel", "u_velocity", "vozocrtx", "ugos", "u10", "uas"),
    "v": ("v", "vo", "water_v", "vvel", "v_velocity", "vomecrty", "vgos", "v10", "vas"),
    "w": ("w", "wo", "water_w", "wvel", "w_velocity", "vovecrtz"),
}
AXES = {
    "x": (
        {"X"},
        ("longitude", "grid_longitude", "projection_x_coordinate"),
        ("degrees_east", "degree_east", "degree_e", "degrees_e"),
        ("lon", "longitude", "x", "nav_lon", "xc"),
    ),
    "y": (
        {"Y"},
        ("latitude", "grid_latitude", "projection_y_coordinate"),
        ("degrees_north", "degree_north", "degree_n", "degrees_n"),
        ("lat", "latitude", "y", "nav_lat", "yc"),
    ),
    "z": (
        {"Z"},
        ("depth", "height", "altitude", "ocean_sigma_coordinate", "model_level_number"),
        (),
        ("depth", "z", "lev", "level", "deptht", "height", "altitude"),
    ),
    "time": ({"T"}, ("time",), (), ("time", "t", "time_counter")),
}


def speed_scale(var, where_: str) -> float:
    """The factor from `var`'s `units` to m/s, read by pint (UDUNITS' spellings: `m s-1`,
    `meters s-1`, `cm/s`, `km h-1`, `knots`, ...); `ValueError` naming the file, the variable and
    the units for units that are not a speed (missing units are taken as m/s, warned)."""
    if not attr(var, "units"):
        _log.warning("%s: velocity %r has no units: taken as m/s", where_, var.name)
        return 1.0
    return _factor(var, where_, "[length]/[time]", "m/s", "a speed (m/s, cm s-1, km/h, knots, ...)")


def length_scale(var, where_: str) -> float:
    """The factor from `var`'s `units` to metres (POP's `centimeters`, `cm`, `m`; missing: m);
    `ValueError` naming the file and the variable for units that are not a length."""
    return _factor(var, where_, "[length]", "m", "a length (m, cm, ...)") if attr(var, "units") else 1.0


def _factor(var, where_: str, dimension: str, to: str, kind: str) -> float:
    """`var`'s units in `to` by pint, or `ValueError` naming them: not `kind`."""
    units = attr(var, "units")
    try:
        quantity = _units().Quantity(1.0, {"centimeters": "cm", "centimetres": "cm"}.get(units, units))
    except Exception:  # noqa: BLE001 -- pint's many parse errors: the units are not ones it knows
        quantity = None
    if quantity is None or not quantity.check(dimension):
        name = f"velocity {var.name!r}" if to == "m/s" else repr(var.name)
        raise ValueError(f"{where_}: {name} has units {units!r}, which is not {kind}")
    return float(quantity.to(to).magnitude)


class InMetresPerSecond:
    """A velocity in m/s by each file's own `units` (each file of a series says its own: a
    later day in cm/s is converted, not read as m/s); each variable's units parsed once."""

    def __init__(self):
        self.scales: dict[tuple[str, str], float] = {}

    def factor(self, ds, name: str) -> float:
        """`ds[name]`'s factor to m/s."""
        key = (str(name), attr(ds[name], "units"))
        if key not in self.scales:
            self.scales[key] = speed_scale(ds[name], where(ds))
        return self.scales[key]

    def __call__(self, ds, name: str, values: np.ndarray) -> np.ndarray:
        """`values` read from `ds[name]`, in m/s."""
        return values * self.factor(ds, name)


@functools.cache
def _units():
    """pint's registry, reading UDUNITS' exponents (`s-1`, `m2`) as pint's `**`; its parsed
    definitions kept in pint's own cache folder (a first read in a process then takes 0.02 s to
    make it, not 0.2-0.6 s), or parsed afresh where that folder cannot be written."""
    import pint

    exponents = [lambda text: re.sub(r"(?<=[A-Za-z])(-?\d+)", r"**\1", text)]
    try:
        return pint.UnitRegistry(preprocessors=exponents, cache_folder=":auto:")
    except OSError:
        return pint.UnitRegistry(preprocessors=exponents)


def attr(var, name: str) -> str:
    return str(var.attrs.get(name, "")).strip()


def component(ds, which: str, given: Hashable | None, dims: Sequence[Hashable] | None) -> Hashable | None:
    """The variable holding velocity component `which` ('u', 'v', 'w')."""
    if given is not None:
        if given not in ds:
            raise ValueError(
                f"{where(ds)}: velocity variable {given!r} not in the dataset (it has {sorted(ds.data_vars)})"
            )
        return given
    candidates = [n for n in ds.data_vars if ds[n].ndim >= 2 and (dims is None or set(ds[n].dims) == set(dims))]
    for standard in STANDARD[which]:
        found = [n for n in candidates if attr(ds[n], "standard_name") == standard]
        if len(found) > 1:
            raise ValueError(
                f"{where(ds)}: variables {found} all have standard_name {standard!r}; pass {which}= to choose"
            )
        if found:
            return found[0]
    for name in NAMES[which]:
        found = [n for n in candidates if str(n).lower() == name]
        if found:
            return found[0]
    return None


def axis_of(ds, dims: Sequence[Hashable], which: str, given: Hashable | None) -> Hashable | None:
    """The dimension of `dims` that is axis `which` ('x', 'y', 'z', 'time')."""
    if given is not None:
        if given not in dims:
            raise ValueError(f"{where(ds)}: {which} dimension {given!r} is not among the velocity's dims {dims}")
        return given
    axis, standard, units, names = AXES[which]
    for dim in dims:
        coord = ds[dim] if dim in ds.variables else None
        if coord is None:
            continue
        dated = np.issubdtype(coord.dtype, np.datetime64) or coord.dtype == object
        vertical = which == "z" and attr(coord, "positive").lower() in (
            "up",
            "down",
        )  # CF: only vertical coordinates say which way is up
        if (
            attr(coord, "axis").upper() in axis
            or attr(coord, "standard_name") in standard
            or attr(coord, "units").lower() in units
            or (which == "time" and dated)
            or vertical
        ):
            return dim
    for dim in dims:
        if str(dim).lower() in names:
            return dim
    return None


def where(ds) -> str:
    return ds.attrs.get("flowkit_source", "from_xarray")


class Layout:
    """Where each velocity variable's values go in the field's table: per variable its spatial
    dims (in x, y[, z] order; None for w = 0) and per axis the index into its own coordinate
    of each table node (-1: nothing there). On an A-grid every variable shares the axes (flipped
    where stored descending); on a C-grid the axes are the cell faces, each component taken at
    its own faces and at the cell centres along the other axes."""

    def __init__(self, names, dims, takes, axes, staggering, lonlat=None, angle=None):
        self.names, self.dims, self.takes, self.axes, self.staggering = names, dims, takes, axes, staggering
        self.lonlat = lonlat
        """Curvilinear grids: node longitudes and latitudes, `(n_x, n_y)` each (`axes` then index
        the nodes, but for depth)."""
        self.angle = angle
        """Curvilinear grids: `(cos, sin)` of the angle from east to the grid's x axis, per node,
        or None (the components are eastward and northward already)."""

    def land(self, first_slice: np.ndarray, masked: np.ndarray | None) -> np.ndarray:
        """Land nodes (A-grid: any NaN component) or cells (C-grid: every face NaN), with the
        mask's zeros."""
        nan = np.isnan(first_slice)
        if self.staggering == "A":
            land = nan.any(axis=-1)
        else:  # a cell is land when all its faces are: the one at its node and the next, per axis
            land = np.ones(first_slice.shape[:-1], bool)
            for c in range(first_slice.shape[-1]):
                land &= nan[..., c] & np.roll(nan[..., c], -1, axis=c)
            for axis in range(land.ndim):
                land[(slice(None),) * axis + (-1,)] = False
        return land if masked is None else land | masked


def coordinate(ds, dim: Hashable) -> np.ndarray:
    return (
        np.asarray(ds[dim].values, dtype=np.float64)
        if dim in ds.variables
        else np.arange(ds.sizes[dim], dtype=np.float64)
    )


def layout_of(
    ds,
    u: Hashable,
    v: Hashable,
    w: Hashable | None,
    x: Hashable | None,
    y: Hashable | None,
    z: Hashable | None,
    td: Hashable | None,
) -> Layout:
    """The table layout of `u`, `v` (and `w`): an A-grid when they share their dims, else a
    C-grid (u on x faces, v on y faces, w on z faces); curvilinear when 2-D longitudes and
    latitudes span the velocity's horizontal dims."""
    dims_u, dims_v = tuple(ds[u].dims), tuple(ds[v].dims)
    lonlat = _lonlat_2d(ds, dims_u) if x is None and y is None else None
    if lonlat is not None:
        y, x = lonlat[0].dims

    def spatial(name, dims):
        xd, yd = axis_of(ds, dims, "x", x), axis_of(ds, dims, "y", y)
        if xd is None or yd is None:
            raise ValueError(
                f"{where(ds)}: cannot tell the x and y dimensions of {name!r} (dims {dims}); pass x= and y="
            )
        zd = axis_of(ds, [d for d in dims if d not in (xd, yd, td)], "z", z)
        extra = set(dims) - {xd, yd, zd, td, None}
        if extra:
            raise ValueError(
                f"{where(ds)}: {name!r} has dimensions {sorted(extra)} besides space and time; select "
                "them first (e.g. ds.isel(ensemble=0))"
            )
        return [xd, yd] + ([zd] if zd is not None and ds.sizes[zd] > 1 else [])

    su, sv = spatial(u, dims_u), spatial(v, dims_v)
    if w is not None and len(su) < 3:
        raise ValueError(
            f"{where(ds)}: w={w!r} given but {u!r} has no depth dimension with several levels (dims {dims_u}); pass z="
        )
    if len(su) == 3:
        w = component(ds, "w", w, dims_u) or component(ds, "w", w, None)
    sw = spatial(w, tuple(ds[w].dims)) if w is not None else None
    names = [u, v] + ([w] if len(su) == 3 else [])
    if set(dims_u) == set(dims_v) and (w is None or set(ds[w].dims) == set(dims_u)):
        coords = [coordinate(ds, d) for d in su]
        takes = [np.arange(len(c))[::-1] if len(c) > 1 and c[1] < c[0] else np.arange(len(c)) for c in coords]
        axes = [c[t] for c, t in zip(coords, takes)]
        dims = [su] * 2 + ([sw] if len(su) == 3 else [])
        if lonlat is None:
            return Layout(names, dims, [takes] * len(names), axes, "A")
        lon, lat = (np.asarray(c.transpose(*su[:2]).values, np.float64) for c in lonlat)
        _log.info(
            "%s is a curvilinear grid (2-D %s, %s): tracked as a mesh of its cells",
            where(ds),
            lonlat[0].name,
            lonlat[1].name,
        )
        angle = _angle(ds, su[:2])
        if angle is None and attr(ds[u], "standard_name") in GRID_RELATIVE:
            angle = grid_angle(ds, u, lon, lat)
        return Layout(names, dims, [takes] * len(names), axes, "A", (lon, lat), angle)
    if su[0] == sv[0] or su[1] == sv[1] or len(su) != len(sv):
        raise ValueError(
            f"{where(ds)}: {u!r} (dims {dims_u}) and {v!r} (dims {dims_v}) are neither on the same "
            "grid nor on a C-grid (u on x faces, v on y faces)"
        )
    faces = [coordinate(ds, su[0]), coordinate(ds, sv[1])]
    centres = [coordinate(ds, sv[0]), coordinate(ds, su[1])]
    staggered_z = len(su) == 3 and sw is not None and sw[2] != su[2]
    if len(su) == 3:
        faces.append(coordinate(ds, sw[2]) if staggered_z else coordinate(ds, su[2]))
        centres.append(coordinate(ds, su[2]))
    axes, face_takes, centre_takes = [], [], []
    for a, (f, c) in enumerate(zip(faces, centres)):
        order = np.argsort(f)
        axes.append(f[order])
        face_takes.append(order)
        centre_takes.append(centres_in(axes[-1], c, "xyz"[a], where(ds)) if a < 2 or staggered_z else order)
    takes = [[face_takes[a] if a == comp else centre_takes[a] for a in range(len(axes))] for comp in range(len(names))]
    dims = [su, sv] + ([sw if sw is not None else None] if len(su) == 3 else [])
    if len(su) == 3 and sw is None:
        _log.info("%s has no vertical velocity: tracking in 3-D with w = 0", where(ds))
    _log.info(
        "%s is an Arakawa C-grid (%s on x faces, %s on y faces): interpolated face to face",
        where(ds),
        u,
        v,
    )
    return Layout(names, dims, takes, axes, "C")


def _lonlat_2d(ds, dims):
    """The 2-D longitude and latitude variables over two of `dims`, or None (a regular grid)."""
    found = []
    for which, more in (("x", ("lon_rho", "glamt")), ("y", ("lat_rho", "gphit"))):
        _, standard, units, names = AXES[which]
        matches = [
            ds[n]
            for n in ds.variables
            if ds[n].ndim == 2
            and set(ds[n].dims) <= set(dims)
            and (
                attr(ds[n], "standard_name") in standard[:1]
                or attr(ds[n], "units").lower() in units
                or str(n).lower() in names + more
            )
        ]
        if not matches:
            return None
        found.append(matches[0])
    lon, lat = found
    if lon.dims != lat.dims:
        lat = lat.transpose(*lon.dims)
    return lon, lat


def _angle(ds, spatial):
    """`(cos, sin)` of the grid's angle from east, `(n_x, n_y)`, from ROMS' `angle` (radians, or
    degrees by its units) or MITgcm's `AngleCS`/`AngleSN`; None when the file has neither."""
    if "AngleCS" in ds and "AngleSN" in ds:
        return tuple(np.asarray(ds[n].transpose(*spatial).values, np.float64) for n in ("AngleCS", "AngleSN"))
    if "angle" in ds and set(ds["angle"].dims) == set(spatial):
        angle = np.asarray(ds["angle"].transpose(*spatial).values, np.float64)
        angle = np.deg2rad(angle) if attr(ds["angle"], "units").lower().startswith("deg") else angle
        _log.info("%s: grid-relative velocities rotated to east and north by the variable 'angle'", where(ds))
        return np.cos(angle), np.sin(angle)
    return None


def grid_angle(ds, u, lon, lat):
    """`(cos, sin)` of the angle from east to a projected grid's x axis at each node, for
    grid-relative components (`x_wind`, `x_sea_water_velocity`): from the variable's
    `grid_mapping` with pyproj (the direction in which the projection's x grows, at each node's
    own lon/lat), else from the nodes' lon/lat along the grid's x index."""
    mapping = attr(ds[u], "grid_mapping")
    if mapping and mapping in ds.variables:
        import pyproj

        try:
            crs = pyproj.CRS.from_cf(dict(ds[mapping].attrs))
        except pyproj.exceptions.CRSError as err:
            raise ValueError(
                f"{where(ds)}: grid_mapping {mapping!r} of {u!r} is not a projection pyproj reads ({err})"
            ) from None
        forward = pyproj.Transformer.from_crs(crs.geodetic_crs, crs, always_xy=True)
        x, y = forward.transform(lon, lat)
        step = 1e-3 * np.nanmax(np.hypot(np.diff(x, axis=0), np.diff(y, axis=0)))  # a thousandth of a cell along x
        lon2, lat2 = forward.transform(x + step, y, direction="INVERSE")
        kind = crs.name if crs.name not in ("", "undefined") else ds[mapping].attrs.get("grid_mapping_name", "")
        source = f"its grid_mapping {mapping!r}" + (f" ({kind.replace('_', ' ')})" if kind else "")
    else:
        lon2, lat2 = np.gradient(lon, axis=0), np.gradient(lat, axis=0)
        lon2, lat2 = lon + lon2, lat + lat2
        source = "its nodes' longitudes and latitudes"
    east = ((lon2 - lon + 180) % 360 - 180) * np.cos(np.deg2rad(lat))
    north = lat2 - lat
    norm = np.hypot(east, north)
    _log.info(
        "%s: %r is grid-relative (standard_name %r): turned to east/north by %s",
        where(ds),
        u,
        attr(ds[u], "standard_name"),
        source,
    )
    return east / norm, north / norm


def centres_in(faces: np.ndarray, centres: np.ndarray, axis: str, where: str) -> np.ndarray:
    """For each cell between consecutive `faces`, the index of the one centre inside it; -1 for
    the last node (it starts no cell)."""
    found = np.full(len(faces), -1)
    for i in range(len(faces) - 1):
        inside = np.nonzero((centres > faces[i]) & (centres < faces[i + 1]))[0]
        if len(inside) != 1:
            raise ValueError(
                f"{where}: C-grid {axis} axis: the cell between faces {faces[i]:g} and {faces[i + 1]:g} "
                f"holds {len(inside)} cell centres, not one"
            )
        found[i] = inside[0]
    return found
