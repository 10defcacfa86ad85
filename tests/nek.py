"""Nek5000 output written as Nek5000 writes it: a `.nek5000` metadata file naming one binary
field file per time step (`#std` header, endian tag, element map, then per element the
coordinates and the velocity at its Gauss-Lobatto-Legendre nodes). No Nek5000 writer comes with
the `vtk` package; this follows Nek5000's documented field-file layout."""

from pathlib import Path

import numpy as np

GLL4 = np.array([-1.0, -np.sqrt(0.2), np.sqrt(0.2), 1.0])  # the 4 Gauss-Lobatto-Legendre nodes


def box_elements(shape=(3, 2, 2), size=(2.0, 1.0, 1.0)) -> np.ndarray:
    """`(E, 3, n, n, n)` node coordinates of a box split into `shape` spectral elements with 4
    GLL nodes per direction, x fastest within an element (Nek5000's order: [z, y, x])."""
    r = (GLL4 + 1) / 2
    elements = []
    for k in range(shape[2]):
        for j in range(shape[1]):
            for i in range(shape[0]):
                z, y, x = np.meshgrid(
                    (k + r) / shape[2] * size[2],
                    (j + r) / shape[1] * size[1],
                    (i + r) / shape[0] * size[0],
                    indexing="ij",
                )
                elements.append(np.stack([x, y, z]))
    return np.array(elements)


def write_nek5000(folder, name: str, elements: np.ndarray, velocity, times) -> Path:
    """`folder/name.nek5000` and one field file per time in `times`, each holding the element
    coordinates and `velocity(points (..., 3), t)` at the nodes, in float32 as Nek5000 writes
    by default. Returns the `.nek5000` path."""
    folder = Path(folder)
    count, n = len(elements), elements.shape[-1]
    points = np.moveaxis(elements, 1, -1)  # (E, n, n, n, 3)
    for step, t in enumerate(times, start=1):
        values = np.moveaxis(velocity(points, t), -1, 1)  # (E, 3, n, n, n)
        header = f"#std 4 {n:2d} {n:2d} {n:2d} {count:10d} {count:10d} {t:20.13E} {step:9d} {0:6d} {1:6d} XU"
        with open(folder / f"{name}0.f{step:05d}", "wb") as f:
            f.write(header.ljust(132).encode())
            np.array([6.54321], "<f4").tofile(f)  # tells the reader the byte order
            np.arange(1, count + 1, dtype="<i4").tofile(f)  # element map
            elements.reshape(count, -1).astype("<f4").tofile(f)  # per element: x, y, z blocks
            values.reshape(count, -1).astype("<f4").tofile(f)  # per element: u, v, w blocks
    path = folder / f"{name}.nek5000"
    path.write_text(f"filetemplate: {name}%01d.f%05d\nfirsttimestep: 1\nnumtimesteps: {len(times)}\n")
    return path
