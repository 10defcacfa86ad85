"""The later files of a `.vtu` series, read against the first: their arrays decoded with NumPy
and zlib. Every file repeats the mesh, and inflating it again is ~90 % of reading such a file
with VTK's reader (the brief's tets: 95 of 105 ms). A later file here is checked to hold the
first file's mesh byte for byte, and only its arrays are decoded. Data appended (raw or base64)
or inline in base64, zlib or uncompressed, are read here; anything else (ASCII data, LZ4/LZMA,
big-endian files, string arrays) gives None, and VTK's reader reads the file."""

import base64
import dataclasses
import re
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path
from typing import Any

import numpy as np

_TYPES = {
    f"{kind}{bits}": np.dtype(f"<{code}{bits // 8}")
    for kind, code in (("Int", "i"), ("UInt", "u"), ("Float", "f"))
    for bits in (8, 16, 32, 64)
    if kind != "Float" or bits >= 32
}
_SECTIONS = (("field", "FieldData"), ("point", "Piece/PointData"), ("cell", "Piece/CellData"))
_MESH = ("Piece/Points", "Piece/Cells")


@dataclasses.dataclass(frozen=True)
class _Array:
    """One data array: where it is stored (`data[at:]`, appended or the element's own text) and
    how (`encoding`: "raw" or "base64")."""

    name: str
    dtype: np.dtype
    components: int
    data: bytes
    at: int
    encoding: str


@dataclasses.dataclass(frozen=True)
class VtuFile:
    """A `.vtu` file's format (`byte_order`, header type, compressor, appended encoding), its
    arrays by section (`field`, `point`, `cell`), and its mesh (points, cells and their counts)
    as stored, to compare with another file's."""

    path: Path
    form: tuple
    arrays: dict[str, list[_Array]]
    mesh: bytes

    def decoded(self, array: _Array) -> np.ndarray:
        """`(n, components)` values of one array."""
        header = np.dtype("<u8" if self.form[1] == "UInt64" else "<u4")
        read = _base64_payload if array.encoding == "base64" else _raw_payload
        values = np.frombuffer(read(array.data, array.at, header, compressed=bool(self.form[2])), array.dtype)
        if values.size % array.components:
            raise ValueError(f"{self.path}: array {array.name!r} holds {values.size} values, not whole tuples")
        return values.reshape(-1, array.components)


def read_vtu(path: Path) -> VtuFile | None:
    """`path`'s arrays, or None where this module does not read it (VTK's reader then does)."""
    if path.suffix.lower() != ".vtu":
        return None
    raw = path.read_bytes()
    tag = raw.find(b"<AppendedData")
    close = raw.find(b">", tag) if tag >= 0 else -1
    marker = raw.find(b"_", close) if close >= 0 else -1  # the appended data follow it
    if tag >= 0 and marker < 0:
        return None
    encoding = re.search(rb'encoding\s*=\s*"(\w+)"', raw[tag:close]) if tag >= 0 else None
    appended = encoding.group(1).decode() if encoding else ""
    try:
        root = ET.fromstring(raw[:tag] + b"</VTKFile>" if tag >= 0 else raw)
    except ET.ParseError:
        return None
    grid = root.find("UnstructuredGrid")
    form = (root.get("byte_order"), root.get("header_type", "UInt32"), root.get("compressor", ""), appended)
    if (
        root.get("type") != "UnstructuredGrid"
        or grid is None
        or len(grid.findall("Piece")) != 1
        or form[0] != "LittleEndian"
        or form[1] not in ("UInt32", "UInt64")
        or form[2] not in ("", "vtkZLibDataCompressor")
    ):
        return None
    start = marker + 1
    offsets = sorted(
        {int(a.get("offset", "0")) for a in grid.iter("DataArray") if a.get("format") == "appended"}
        | {len(raw) - start}
    )
    ends = dict(zip(offsets, offsets[1:]))

    def stored(a) -> tuple[bytes, int, int, str] | None:
        """`(data, begin, end, encoding)` of an array's bytes as stored."""
        if a.get("format") == "binary":
            text = "".join((a.text or "").split()).encode()
            return text, 0, len(text), "base64"
        if a.get("format") == "appended" and tag >= 0 and appended in ("raw", "base64"):
            offset = int(a.get("offset", "0"))
            if offset not in ends:  # past the file's end (a truncated file): VTK's reader names it
                return None
            return raw, start + offset, start + ends[offset], appended
        return None

    mesh = []
    for section in _MESH:
        for a in grid.findall(f"{section}/DataArray"):
            where = stored(a)
            if where is None:
                return None
            mesh.append(where[0][where[1] : where[2]])
    piece = grid.find("Piece")
    mesh.append(repr(sorted((piece.attrib if piece is not None else {}).items())).encode())
    arrays = {}
    for key, section in _SECTIONS:
        found = []
        for a in grid.findall(f"{section}/DataArray") if key != "field" else _field_arrays(grid):
            where = stored(a)
            if a.get("type") not in _TYPES or where is None:
                return None
            dtype, components = _TYPES[a.get("type", "")], int(a.get("NumberOfComponents", "1"))
            found.append(_Array(a.get("Name", ""), dtype, components, where[0], where[1], where[3]))
        arrays[key] = found
    return VtuFile(path, form, arrays, b"".join(mesh))


def _field_arrays(grid):
    """The field data's numeric arrays (a string array there, a ParaView annotation, is skipped)."""
    return [a for a in grid.findall("FieldData/DataArray") if a.get("type") in _TYPES]


def _raw_payload(raw: bytes, at: int, header: np.dtype, compressed: bool) -> bytes:
    """The bytes of the array stored at `raw[at:]` in raw encoding."""
    size = header.itemsize
    if not compressed:
        (n,) = np.frombuffer(raw, header, 1, at)
        return raw[at + size : at + size + int(n)]
    blocks, block, last = (int(v) for v in np.frombuffer(raw, header, 3, at))
    lengths = np.frombuffer(raw, header, blocks, at + 3 * size).astype(np.int64)
    begin = at + (3 + blocks) * size
    return _inflated(raw, begin, lengths, blocks, block, last)


def _base64_payload(raw: bytes, at: int, header: np.dtype, compressed: bool) -> bytes:
    """The bytes of the array stored at `raw[at:]` in base64: VTK encodes a compressed array's
    header and its blocks as two base64 runs, an uncompressed array's size and data as one."""
    size = header.itemsize
    if not compressed:
        (n,) = np.frombuffer(base64.b64decode(raw[at : at + _encoded(size)]), header, 1)
        return base64.b64decode(raw[at : at + _encoded(size + int(n))])[size : size + int(n)]
    blocks, block, last = (
        int(v) for v in np.frombuffer(base64.b64decode(raw[at : at + _encoded(3 * size)]), header, 3)
    )
    head = _encoded((3 + blocks) * size)
    lengths = np.frombuffer(base64.b64decode(raw[at : at + head]), header, 3 + blocks)[3:].astype(np.int64)
    data = base64.b64decode(raw[at + head : at + head + _encoded(int(lengths.sum()))])
    return _inflated(data, 0, lengths, blocks, block, last)


def _encoded(n: int) -> int:
    """Characters of `n` bytes in base64 (padded)."""
    return 4 * ((n + 2) // 3)


def _inflated(data: bytes, begin: int, lengths: np.ndarray, blocks: int, block: int, last: int) -> bytes:
    """zlib blocks `data[begin:]` of the compressed `lengths`, inflated and joined; each block
    holds `block` bytes but the last (`last`, or a whole block when 0)."""
    ends = begin + np.cumsum(lengths)
    out = b"".join(zlib.decompress(data[int(e - n) : int(e)]) for e, n in zip(ends, lengths))
    expected = block * blocks - (block - last if blocks and last else 0)
    if len(out) != expected:
        raise zlib.error(f"{len(out)} bytes inflated where the header says {expected}")
    return out


@dataclasses.dataclass(frozen=True)
class SharedMesh:
    """A series' first `.vtu`, as its later files are read against it: its format and mesh bytes,
    and its mesh as a VTK data set (points and cells, no arrays; shared, not copied)."""

    form: tuple
    mesh: bytes
    structure: Any

    @classmethod
    def of(cls, path, data) -> "SharedMesh | None":
        """The first file `path`, read by VTK into `data`, or None where later files cannot be
        read here."""
        from vtkmodules.vtkCommonDataModel import vtkUnstructuredGrid

        first = read_vtu(path) if isinstance(path, Path) else None
        if first is None or not isinstance(data, vtkUnstructuredGrid):
            return None
        structure = vtkUnstructuredGrid()
        structure.CopyStructure(data)
        return cls(first.form, first.mesh, structure)

    def read(self, path: Path):
        """A later file on this mesh as a VTK data set: the shared mesh with the file's arrays.
        None where the file's mesh or format differ from the first's, or its data do not decode:
        VTK's reader then reads it (and its checks name what differs)."""
        from vtkmodules.util.numpy_support import numpy_to_vtk
        from vtkmodules.vtkCommonDataModel import vtkUnstructuredGrid

        later = read_vtu(path)
        if later is None or later.form != self.form or later.mesh != self.mesh:
            return None
        out = vtkUnstructuredGrid()
        out.CopyStructure(self.structure)
        for key, attributes in (
            ("point", out.GetPointData()),
            ("cell", out.GetCellData()),
            ("field", out.GetFieldData()),
        ):
            for array in later.arrays[key]:
                try:
                    values = later.decoded(array)
                except (ValueError, zlib.error):
                    return None
                copy = numpy_to_vtk(values, deep=True)
                copy.SetName(array.name)
                attributes.AddArray(copy)
        return out
