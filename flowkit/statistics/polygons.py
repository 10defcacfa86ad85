"""Particles in polygons: counts, entries and exits, residence, connectivity between release
and arrival polygons, first arrival times; polygons from shapely, GeoJSON or shapefiles."""

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from .._custom_types import PathLike
from .base import (
    UNUSED,
    AbstractStatistic,
    RunFacts,
    Tally,
    active,
    frames_per_window,
    window_index,
    window_starts,
    windows,
)

EDGE_CHUNK = 256
"""Polygon edges tested against every particle at once (a frame's memory: particles x this)."""


def read_polygons(path: PathLike, name_field: str | None = None) -> tuple[list, list[str]]:
    """`(geometries, names)`: the polygons of a GeoJSON file (`.geojson`, `.json`) or a shapefile
    (`.shp`), as shapely geometries, named by the features' `name_field` property (default:
    `name` where every feature has one, else their order)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"read_polygons: no file {path}")
    try:
        features = _features(path)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        if str(err).startswith("read_polygons"):
            raise
        raise ValueError(f"read_polygons: {path} is damaged or not polygons ({type(err).__name__}: {err})") from None
    key = name_field or ("name" if features and all("name" in p for _, p in features) else None)
    if key is not None and not all(key in p for _, p in features):
        raise ValueError(f"read_polygons: {path}: not every feature has the property {key!r}")
    names = [str(p[key]) if key else str(i) for i, (_, p) in enumerate(features)]
    return [g for g, _ in features], names


def _features(path: Path) -> list[tuple]:
    """`(geometry, properties)` of each feature of a GeoJSON file or shapefile."""
    import shapely.geometry

    if path.suffix.lower() == ".shp":
        import shapefile

        with shapefile.Reader(str(path)) as reader:
            fields = [f[0] for f in reader.fields[1:]]
            features = [
                (shapely.geometry.shape(r.shape.__geo_interface__), dict(zip(fields, r.record)))
                for r in reader.shapeRecords()
            ]
    elif path.suffix.lower() in (".geojson", ".json"):
        data = json.loads(path.read_text())
        items = data["features"] if data.get("type") == "FeatureCollection" else [data]
        features = [(shapely.geometry.shape(f.get("geometry", f)), f.get("properties") or {}) for f in items]
    else:
        raise ValueError(f"read_polygons: {path}: expected a GeoJSON (.geojson, .json) or shapefile (.shp)")
    return features


def polygon_edges(geometries: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """`(edges (k, c, 4) as x0 y0 x1 y1, owners (k, c, P))`: every ring's edges (exteriors and
    holes) of each polygon or multipolygon, for the even-odd rule, in `k` chunks of `c` edges
    (at most `EDGE_CHUNK`; the last padded with flat edges, never crossed), and each edge's
    polygon one-hot."""
    import shapely

    edges, owner = [], []
    for p, geometry in enumerate(geometries):
        if not isinstance(geometry, (shapely.Polygon, shapely.MultiPolygon)) or geometry.is_empty:
            raise ValueError(f"polygons: item {p} is a {geometry.geom_type}, not a (multi)polygon with an area")
        parts = geometry.geoms if isinstance(geometry, shapely.MultiPolygon) else [geometry]
        for part in parts:
            for ring in [part.exterior, *part.interiors]:
                xy = np.asarray(ring.coords, np.float64)[:, :2]
                edges.append(np.concatenate([xy[:-1], xy[1:]], axis=1))
                owner.append(np.full(len(xy) - 1, p))
    count = sum(map(len, edges))
    chunk = min(EDGE_CHUNK, -(-count // 8) * 8)
    padded = np.concatenate([*edges, np.zeros((-count % chunk, 4))])  # flat edges: never crossed
    owners = np.zeros((len(padded), len(geometries)), np.float32)  # the padding belongs to no polygon
    owners[np.arange(count), np.concatenate(owner)] = 1
    return padded.reshape(-1, chunk, 4), owners.reshape(-1, chunk, len(geometries))


def inside_polygons(x, edges, owners):
    """`(n, P)`: whether each point `x[:, :2]` lies in each polygon (the even-odd rule: the
    rays toward +x crossing its rings' edges; `edges`, `owners`: `polygon_edges`), a chunk
    of edges at a time. The crossings are summed per polygon by a product with the edges'
    owners (in float32: exact for any count of edges a polygon has)."""
    px, py = x[:, 0:1], x[:, 1:2]

    def crossings(parity, part):
        e, o = part
        x0, y0, x1, y1 = e[:, 0], e[:, 1], e[:, 2], e[:, 3]
        straddles = (y0 > py) != (y1 > py)
        at = x0 + (py - y0) * (x1 - x0) / jnp.where(y1 == y0, 1, y1 - y0)
        return parity + (straddles & (px < at)).astype(jnp.float32) @ o.astype(jnp.float32), None

    parity, _ = jax.lax.scan(crossings, jnp.zeros((x.shape[0], owners.shape[-1]), jnp.float32), (edges, owners))
    return jnp.round(parity).astype(jnp.int32) % 2 == 1


class PolygonStats(AbstractStatistic):
    """Particles in polygons, at every saved frame (OceanTracker's polygon statistics and
    connectivity): per time window `count` (particles inside, summed over the window's
    frames), `entries` and `exits` (a particle active at consecutive frames, outside then
    inside, or inside then not: out of the polygon or stopped); over the run, `released` (particles
    by the polygon their seed lies in, the first that holds it, or `outside`), `connectivity`
    (from each release polygon, the particles that were ever inside each polygon: the
    ecologist's connectivity matrix), the first arrival's age (time since release; minimum and
    mean over the particles that arrived) and each polygon's mean `residence_time` per visitor.
    With `events`, also the log of every entry and exit (OceanTracker's polygon event log): which
    particle, which polygon, when, and whether it entered or left, on an `event` dimension.

    **Arguments:**

    - `polygons`: shapely polygons or multipolygons (holes honoured) in the positions' `x, y`
      (longitude, latitude on geographic fields), or a GeoJSON or shapefile (`read_polygons`).
    - `names`: one per polygon (default: the file's `name` property, or their order).
    - `window`: the length of the time windows (seconds) from the run's start; None: one.
    - `name`: its key in `Trajectory.statistics`.
    - `events`: how many entries and exits each device logs per batch of particles (0: no log).
      Events past it are counted (`events_lost`) and said in the log, not kept.

    The cost of a frame grows with particles x polygon vertices (every edge is tested): simplify
    coastline-sized polygons first (`shapely.simplify`).
    """

    edges: Float[Array, "k c 4"]
    owners: Float[Array, "k c p"]
    names: tuple[str, ...] = eqx.field(static=True)
    window: float | None = eqx.field(static=True)
    name: str = eqx.field(static=True)
    events: int = eqx.field(static=True)

    def __init__(
        self,
        polygons,
        names: Sequence[str] | None = None,
        window: float | None = None,
        name: str = "polygons",
        events: int = 0,
    ):
        if isinstance(polygons, (str, Path)):
            polygons, read_names = read_polygons(polygons)
            names = read_names if names is None else names
        polygons = list(polygons)
        if not polygons:
            raise ValueError("PolygonStats: no polygons given")
        names = [str(i) for i in range(len(polygons))] if names is None else [str(n) for n in names]
        if len(names) != len(polygons) or len(set(names)) != len(names):
            raise ValueError(f"PolygonStats: {len(names)} names for {len(polygons)} polygons, each unique: {names}")
        if window is not None and not window > 0:
            raise ValueError(f"PolygonStats: window must be a positive duration, got {window}")
        if int(events) != events or not 0 <= events < 2**31:
            raise ValueError(f"PolygonStats: events is how many entries and exits to log (0: none), got {events}")
        self.edges, self.owners = polygon_edges(polygons)
        self.names, self.window, self.name = tuple(names), None if window is None else float(window), str(name)
        self.events = int(events)

    def tally(self, run: RunFacts, n_slots: int) -> Tally:
        p, w = len(self.names), windows(run, self.window)
        per_window = lambda: np.zeros((w, p), np.int32)  # noqa: E731
        pairs = lambda dtype, fill=0: np.full((p + 1, p), fill, dtype)  # noqa: E731
        return Tally(
            slots={
                "inside": np.zeros((n_slots, p), bool),
                "visited": np.zeros((n_slots, p), bool),
                "seen": np.zeros(n_slots, bool),
                "release": np.full(n_slots, p, np.int32),
            },
            totals={
                "count": per_window(),
                "entries": per_window(),
                "exits": per_window(),
                "released": np.zeros(p + 1, np.int32),
                "connectivity": pairs(np.int32),
                "arrival_sum": pairs(run.dtype),
                "arrival_min": pairs(run.dtype, np.inf),
                **_event_log(self.events),
            },
        )

    def start(self, tally: Tally, x) -> Tally:
        inside = inside_polygons(x, self.edges, self.owners)
        release = jnp.where(inside.any(axis=1), jnp.argmax(inside, axis=1), len(self.names)).astype(jnp.int32)
        return eqx.tree_at(lambda t: t.slots["release"], tally, release)

    def add(self, tally, frame, t, save_interval, x, status, t_release, index, variables) -> Tally:
        s, totals = tally.slots, dict(tally.totals)
        p = len(self.names)
        moving = active(status)
        inside = inside_polygons(x, self.edges, self.owners) & moving[:, None]
        first = moving & ~s["seen"]
        arrived = inside & ~s["visited"]
        w = window_index(frame, save_interval, self.window, totals["count"].shape[0])
        per_polygon = lambda mask: jnp.sum(mask, axis=0, dtype=jnp.int32)  # noqa: E731
        entered, left = inside & ~s["inside"] & s["seen"][:, None], s["inside"] & ~inside
        totals["count"] = totals["count"].at[w].add(per_polygon(inside))
        totals["entries"] = totals["entries"].at[w].add(per_polygon(entered))
        totals["exits"] = totals["exits"].at[w].add(per_polygon(left))
        if self.events:
            totals.update(_logged(totals, entered, left, frame, index, self.events))
        totals["released"] = totals["released"].at[s["release"]].add(first.astype(jnp.int32))
        by_release = lambda values: jax.ops.segment_sum(values, s["release"], p + 1)  # noqa: E731
        totals["connectivity"] = totals["connectivity"] + by_release(arrived.astype(jnp.int32))
        age = jnp.abs(t - t_release).astype(totals["arrival_sum"].dtype)[:, None]
        totals["arrival_sum"] = totals["arrival_sum"] + by_release(jnp.where(arrived, age, 0))
        least = jax.ops.segment_min(jnp.where(arrived, age, jnp.inf), s["release"], p + 1)
        totals["arrival_min"] = jnp.minimum(totals["arrival_min"], least)
        slots = {
            "inside": inside,
            "visited": s["visited"] | inside,
            "seen": s["seen"] | moving,
            "release": s["release"],
        }
        return Tally(slots, totals)

    def dataset(self, totals: dict, run: RunFacts):
        import xarray as xr

        time, time_attrs = window_starts(run, self.window, totals["count"].shape[0])
        arrived = totals["connectivity"]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_arrival = np.where(arrived > 0, totals["arrival_sum"] / np.maximum(arrived, 1), np.nan)
            visitors = arrived.sum(axis=0)
            residence = np.where(
                visitors > 0, totals["count"].sum(axis=0) * abs(run.save_interval) / np.maximum(visitors, 1), np.nan
            )
        seconds = {"units": "s"}
        pairs = ("release", "polygon")
        dataset = xr.Dataset(
            {
                "count": (
                    ("time", "polygon"),
                    totals["count"].astype(np.int64),
                    {"long_name": "particles inside, summed over the window's frames", "cell_methods": "time: sum"},
                ),
                "entries": (
                    ("time", "polygon"),
                    totals["entries"].astype(np.int64),
                    {"long_name": "particles entering"},
                ),
                "exits": (("time", "polygon"), totals["exits"].astype(np.int64), {"long_name": "particles leaving"}),
                "frames": (
                    "time",
                    frames_per_window(run, self.window, len(time)),
                    {"long_name": "frames in the window"},
                ),
                "released": (
                    "release",
                    totals["released"].astype(np.int64),
                    {"long_name": "particles released in the polygon (outside: in none)"},
                ),
                "connectivity": (
                    pairs,
                    arrived.astype(np.int64),
                    {"long_name": "particles released in `release` that were ever inside `polygon`"},
                ),
                "first_arrival_min": (
                    pairs,
                    np.where(arrived > 0, totals["arrival_min"], np.nan),
                    {"long_name": "earliest age at first arrival", **seconds},
                ),
                "first_arrival_mean": (pairs, mean_arrival, {"long_name": "mean age at first arrival", **seconds}),
                "residence_time": (
                    "polygon",
                    residence,
                    {"long_name": "time inside per visiting particle (frames x save interval)", **seconds},
                ),
            },
            coords={
                "time": ("time", time, time_attrs),
                "polygon": ("polygon", list(self.names)),
                "release": ("release", [*self.names, "outside"]),
            },
            attrs={
                "Conventions": "CF-1.8",
                "title": "flowkit polygon statistics",
                "save_interval_s": abs(run.save_interval),
            },
        )
        return dataset.merge(self._events(totals, run), combine_attrs="override") if self.events else dataset

    def _events(self, totals: dict, run: RunFacts):
        """The log of entries and exits on an `event` dimension, by particle, then time, then
        polygon; events past `events` counted in `events_lost` and said in the log."""
        import xarray as xr

        particle, code, frame = (totals[f"{k}_log"] for k in ("particle", "polygon", "frame"))
        entry = code >= 0
        polygon = np.where(entry, code, -code - 1)
        order = np.lexsort((polygon, frame, particle))
        particle, polygon, frame, entry = particle[order], polygon[order], frame[order], entry[order]
        lost = int(totals["events_seen"]) - len(order)
        if lost:
            logging.getLogger("flowkit").warning(
                "PolygonStats %r: %d of %d entries and exits did not fit events=%d (per device and batch): "
                "give a larger events= to log them all",
                self.name,
                lost,
                lost + len(order),
                self.events,
            )
        when, time_attrs = window_starts(run, abs(run.save_interval), run.n_frames)
        kinds = {"flag_values": np.array([1, -1], np.int8), "flag_meanings": "entry exit"}
        return xr.Dataset(
            {
                "event_particle": ("event", particle.astype(np.int64), {"long_name": "the particle (its seed's row)"}),
                "event_polygon": ("event", np.asarray(self.names)[polygon]),
                "event_time": (
                    "event",
                    when[frame],
                    {
                        **time_attrs,
                        "long_name": "the saved frame that first saw the particle inside (entry) or not (exit)",
                    },
                ),
                "event_kind": (
                    "event",
                    np.where(entry, 1, -1).astype(np.int8),
                    {"long_name": "entry or exit", **kinds},
                ),
                "events_lost": ((), lost, {"long_name": "entries and exits past `events`, not logged"}),
            }
        )


def _event_log(capacity: int) -> dict:
    """The zero totals of an event log of `capacity` entries: each event's particle, polygon
    (entries: its index; exits: -(index + 1)) and frame, and the events seen (logged or not)."""
    if not capacity:
        return {}
    log = lambda: np.full(capacity, UNUSED, np.int32)  # noqa: E731
    return {"particle_log": log(), "polygon_log": log(), "frame_log": log(), "events_seen": np.zeros((), np.int32)}


def _logged(totals: dict, entered, left, frame, index, capacity: int) -> dict:
    """The event log with a frame's entries and exits appended in slot and polygon order, those
    past `capacity` dropped (and counted in `events_seen`)."""
    n, p = entered.shape
    happened = (entered | left).reshape(-1)
    rank = jnp.cumsum(happened, dtype=jnp.int32) - 1
    seen = totals["events_seen"]
    at = jnp.where(happened & (rank < capacity - seen), seen + rank, capacity)  # past the end: dropped
    flat = jnp.arange(n * p, dtype=jnp.int32)
    polygon = jnp.where(entered.reshape(-1), flat % p, -(flat % p) - 1)
    return {
        "particle_log": totals["particle_log"].at[at].set(index[flat // p], mode="drop"),
        "polygon_log": totals["polygon_log"].at[at].set(polygon, mode="drop"),
        "frame_log": totals["frame_log"].at[at].set(jnp.broadcast_to(frame.astype(jnp.int32), (n * p,)), mode="drop"),
        "events_seen": seen + jnp.sum(happened, dtype=jnp.int32),
    }
