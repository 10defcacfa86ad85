"""The NOAA ADIOS oil database's records, found by the names oil-spill modellers know them by.

flowkit ships the database's GNOME-suitable records (`adios_oils.json.xz`: NOAA's public
`noaa-oil-data` repository, and those of OpenDrift's harvest of it, `oils.xz`, that the
repository lacks: NOAA's generic oils among them), as NOAA wrote them; `write_archive` builds
that file again from those sources. A Norwegian record (id `NO…`) is named with its sample
year, as OpenDrift names it ("AASGARD A 2003").
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
    """The record of the oil called `name`, or with the ADIOS id `name` (`AD01234`): spelt as
    the record spells it, else in any case (NOAA's generic oils come twice, `GENERIC DIESEL`
    and `Generic Diesel`); an unknown name is refused with the closest ones, a name two records
    share with their ids."""
    given = name.strip()
    wanted = given.upper()
    found = [r for r in records() if r["oil_id"].upper() == wanted or display_name(r).upper() == wanted]
    exact = [r for r in found if given in (r["oil_id"], display_name(r))]
    found = exact if len(exact) == 1 else found
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


def _read_records(source: Path) -> list[dict]:
    """The records in `source`: the JSON files under a folder, or an xz archive of a list."""
    if source.suffix == ".xz":
        with lzma.open(source, "rt", encoding="utf-8") as archive:
            return list(json.load(archive))
    return [json.loads(file.read_text(encoding="utf-8")) for file in sorted(source.rglob("*.json"))]


def write_archive(sources: list[Path], path: Path = ARCHIVE) -> int:
    """Write the GNOME-suitable records of `sources` to `path`, a later source's record
    replacing an earlier one's of the same id; returns how many. A source is a folder of JSON
    records (a checkout of NOAA's `noaa-oil-data`) or an xz archive of a list of them
    (OpenDrift's `oils.xz`, which holds NOAA's generic oils)."""
    found: dict[str, dict] = {}
    for source in sources:
        for data in _read_records(Path(source)):
            if "oil_id" in data and data.get("metadata", {}).get("gnome_suitable"):
                found[data["oil_id"]] = data
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as archive:
        json.dump([found[k] for k in sorted(found)], archive, separators=(",", ":"))
    return len(found)
