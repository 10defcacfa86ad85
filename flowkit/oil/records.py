"""The NOAA ADIOS oil database's records, found by the names oil-spill modellers know them by.

flowkit ships the database's GNOME-suitable records (`adios_oils.json.xz`: NOAA's public
`noaa-oil-data` repository, and the generic oils that OpenDrift ships beside it), as NOAA wrote
them; `write_archive` builds that file again from a checkout of the repository. A Norwegian
record (id `NO…`) is named with its sample year, as OpenDrift names it ("AASGARD A 2003").
"""

import difflib
import functools
import json
import lzma
from pathlib import Path

ARCHIVE = Path(__file__).with_name("adios_oils.json.xz")


def display_name(record: dict) -> str:
    """The name a record is known by: its own, with the sample year for Norwegian oils."""
    metadata = record["metadata"]
    name = metadata["name"]
    if not record["oil_id"].startswith("NO"):
        return name
    year = str(metadata.get("sample_date") or metadata["reference"]["year"])[:4]
    return name if name.endswith(year) else f"{name} {year}"


@functools.cache
def records() -> tuple[dict, ...]:
    """Every shipped record."""
    with lzma.open(ARCHIVE, "rt", encoding="utf-8") as archive:
        return tuple(json.load(archive))


def names() -> list[str]:
    """The names of the shipped oils, as `record` takes them."""
    return sorted({display_name(r) for r in records()})


def record(name: str) -> dict:
    """The record of the oil called `name` (any case), or with the ADIOS id `name` (`AD01234`);
    an unknown name is refused with the closest ones, a name two records share with their ids."""
    wanted = name.strip().upper()
    found = [r for r in records() if r["oil_id"].upper() == wanted or display_name(r).upper() == wanted]
    if len(found) == 1:
        return found[0]
    if found:
        ids = ", ".join(f"{r['oil_id']} ({_described(r)})" for r in found)
        raise ValueError(f"oil {name!r}: {len(found)} ADIOS records have this name: {ids}; give the id")
    close = difflib.get_close_matches(wanted, [n.upper() for n in names()], n=6, cutoff=0.5)
    by_upper = {n.upper(): n for n in names()}
    hint = ", ".join(repr(by_upper[c]) for c in close) if close else "none close"
    raise ValueError(f"oil {name!r}: no ADIOS record of that name; the closest: {hint} (fk.oil.records.names())")


def _described(record: dict) -> str:
    metadata = record["metadata"]
    api = metadata.get("API")
    facts = (metadata.get("location"), api and f"API {api}", metadata["reference"]["year"])
    return ", ".join(str(v) for v in facts if v)


def write_archive(sources: list[Path], path: Path = ARCHIVE) -> int:
    """Write the GNOME-suitable records among the JSON files under `sources` (a checkout of
    NOAA's `noaa-oil-data`, its `data/oil` folder, a folder of extra records) to `path`;
    returns how many."""
    found: dict[str, dict] = {}
    for source in sources:
        for file in sorted(Path(source).rglob("*.json")):
            data = json.loads(file.read_text(encoding="utf-8"))
            if "oil_id" in data and data.get("metadata", {}).get("gnome_suitable"):
                found[data["oil_id"]] = data
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as archive:
        json.dump([found[k] for k in sorted(found)], archive, separators=(",", ":"))
    return len(found)
