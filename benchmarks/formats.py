"""Reading speed of `fk.io.read` per format, on one mesh of the brief's cell count.

A box of ~850 000 hexahedra (the brief's mesh has ~850 000 tetrahedra) with `--steps` time
steps of a velocity field, written in each format by its own writer: a `.pvd` of zlib `.vtu`
files (the brief's layout, the baseline), EnSight Gold (binary), an OpenFOAM case (ASCII, as
`tests/foam.py` writes it) and a CGNS file (HDF5, as `tests/cgns.py` writes it). Each is then
read cold, in a fresh process
(`fk.io.read(path)`: the mesh processed once, the locator built, the field on the device), and
the seconds are printed beside the `.vtu` baseline's.

    python benchmarks/formats.py [--cells 95 95 94] [--steps 4]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import vtk
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import foam  # noqa: E402  (the OpenFOAM, EnSight and CGNS writers the tests use)
from cgns import write_cgns  # noqa: E402
from ensight import write_ensight  # noqa: E402

TIMED = """
import sys, time
t = time.perf_counter()
import flowkit as fk
imported = time.perf_counter()
field = fk.io.read(sys.argv[1])
print(f"{time.perf_counter() - imported:.2f} {field.n_cells}")
"""


def flow(t, x):
    return np.stack([1.0 + 0.2 * np.sin(3 * x[:, 1] + t), 0.1 * np.cos(2 * x[:, 0]), 0.05 * x[:, 2] * (1 + t)], axis=1)


def hex_grid(shape):
    """The box's hexahedra as a `vtkUnstructuredGrid` (a structured grid made explicit)."""
    axes = [np.linspace(0.0, 1.0, n + 1) for n in shape]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), -1).transpose(2, 1, 0, 3).reshape(-1, 3)
    grid = vtk.vtkStructuredGrid()
    grid.SetDimensions(*(n + 1 for n in shape))
    vtk_points = vtk.vtkPoints()
    vtk_points.SetData(numpy_to_vtk(points, deep=True))
    grid.SetPoints(vtk_points)
    append = vtk.vtkAppendFilter()
    append.AddInputData(grid)
    append.Update()
    return append.GetOutput(), points


def with_velocity(grid, points, t):
    out = vtk.vtkUnstructuredGrid()
    out.ShallowCopy(grid)
    array = numpy_to_vtk(np.ascontiguousarray(flow(t, points)), deep=True)
    array.SetName("velocity")
    out.GetPointData().AddArray(array)
    return out


def write_all(folder: Path, shape, times):
    grid, points = hex_grid(shape)
    written = {}
    start = time.perf_counter()
    entries = []
    for k, t in enumerate(times):
        writer = vtk.vtkXMLUnstructuredGridWriter()
        writer.SetFileName(str(folder / f"flow_{k}.vtu"))
        writer.SetInputData(with_velocity(grid, points, t))
        writer.SetCompressorTypeToZLib()
        writer.Write()
        entries.append(f'<DataSet timestep="{t}" file="flow_{k}.vtu"/>')
    (folder / "flow.pvd").write_text(
        '<VTKFile type="Collection"><Collection>' + "".join(entries) + "</Collection></VTKFile>\n"
    )
    written["vtu (.pvd, zlib)"] = (folder / "flow.pvd", time.perf_counter() - start)

    start = time.perf_counter()
    case = write_ensight(folder, "flow", [with_velocity(grid, points, t) for t in times], times)
    written["EnSight Gold"] = (case, time.perf_counter() - start)

    start = time.perf_counter()
    written["OpenFOAM (ASCII)"] = (
        foam.write_case(folder / "foamCase", flow, times=tuple(times), shape=shape),
        time.perf_counter() - start,
    )

    start = time.perf_counter()
    hexes = vtk_to_numpy(grid.GetCells().GetConnectivityArray()).reshape(-1, 8)
    written["CGNS (HDF5)"] = (
        write_cgns(folder / "flow.cgns", [], [(points, hexes)], lambda x, t: flow(t, x), times),
        time.perf_counter() - start,
    )
    return written


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, nargs=3, default=[95, 95, 94])
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    times = [0.5 * k for k in range(args.steps)]
    with tempfile.TemporaryDirectory() as tmp:
        written = write_all(Path(tmp), tuple(args.cells), times)
        print(
            f"{int(np.prod(args.cells))} hexahedra, {args.steps} time steps; fk.io.read cold in a "
            "fresh process (import excluded)"
        )
        print(f"{'format':22s} {'write s':>8s} {'read s':>8s} {'vs vtu':>7s}")
        baseline = None
        for name, (path, write_s) in written.items():
            out = subprocess.run(
                [sys.executable, "-c", TIMED, str(path)], capture_output=True, text=True, check=True
            ).stdout.split()
            read_s = float(out[0])
            baseline = baseline or read_s
            print(f"{name:22s} {write_s:8.1f} {read_s:8.2f} {read_s / baseline:6.2f}×")


if __name__ == "__main__":
    main()
