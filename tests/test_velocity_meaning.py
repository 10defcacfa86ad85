"""Which array is the velocity, by what each solver calls it (`flowkit.io.vtk_arrays`): Fluent's
`SV_U/V/W` beside its body force `SV_BF_V`, CGNS' and PLOT3D's momentum over density, names that
say something else never taken, two equal candidates refused."""

import jax.numpy as jnp
import numpy as np
import pytest
from vtkmodules.util.numpy_support import numpy_to_vtk

import flowkit as fk
from flowkit.io.vtk import unstructured_grid, write_vtu
from flowkit.io.vtk_arrays import vector_arrays

VTK_TETRA = 10
POINTS = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
CELLS = np.array([[0, 1, 2, 3], [1, 2, 3, 4]])


def _data(point_arrays: dict, cell_arrays: dict | None = None):
    grid = unstructured_grid(POINTS, CELLS, np.full(len(CELLS), VTK_TETRA), point_arrays)
    for name, values in (cell_arrays or {}).items():
        column = numpy_to_vtk(np.asarray(values, np.float64), deep=True)
        column.SetName(name)
        grid.GetCellData().AddArray(column)
    return grid


def test_fluent_components_not_its_body_force():
    """A Fluent CFF file's cell data: SV_U, SV_V, SV_W beside SV_BF_V (body force) and SV_P."""
    rng = np.random.default_rng(0)
    u, v, w, p = rng.normal(size=(4, len(CELLS)))
    cells = {"SV_BF_V": rng.normal(size=(len(CELLS), 3)), "SV_U": u, "SV_V": v, "SV_W": w, "SV_P": p}
    values, name, on_cells = vector_arrays(_data({}, cells), "room.cas.h5", None, keep_cells=True)
    assert name == "SV_U,SV_V,SV_W" and on_cells
    np.testing.assert_array_equal(values, np.column_stack([u, v, w]))
    with pytest.raises(ValueError, match=r"room\.cas\.h5: no array is a velocity by its name; .*'SV_BF_V': 3"):
        vector_arrays(_data({}, {"SV_BF_V": cells["SV_BF_V"], "SV_P": p}), "room.cas.h5", None)


def test_compressible_momentum_over_density_is_the_velocity(caplog):
    rng = np.random.default_rng(1)
    momentum, density = rng.normal(size=(len(POINTS), 3)), rng.uniform(0.5, 2.0, len(POINTS))
    data = _data({"Momentum": momentum, "Density": density, "EnergyStagnationDensity": density * 3})
    with caplog.at_level("INFO", logger="flowkit"):
        values, name, _ = vector_arrays(data, "shock.cgns", None)
    assert name == "Momentum/Density" and "momentum over density" in caplog.text
    np.testing.assert_allclose(values, momentum / density[:, None], rtol=1e-12)


def test_names_that_say_something_else_are_never_the_velocity_and_equals_are_refused():
    rng = np.random.default_rng(2)
    vectors = {name: rng.normal(size=(len(POINTS), 3)) for name in ("Normals", "grad(p)", "Velocity")}
    _, name, _ = vector_arrays(_data(vectors), "case.vtu", None)
    assert name == "Velocity"
    _, name, _ = vector_arrays(_data({"Normals": vectors["Normals"], "flow_field": vectors["Velocity"]}), "a.vtu", None)
    assert name == "flow_field"  # the only vector whose name means no other thing
    with pytest.raises(
        ValueError, match=r"several vector arrays are named like a velocity: \['velocity_liq', 'velocity_gas'\]"
    ):
        vector_arrays(_data({"velocity_liq": vectors["Velocity"], "velocity_gas": vectors["Normals"]}), "two.vtu", None)


def test_a_compressible_file_reads_as_its_velocity(tmp_path):
    rng = np.random.default_rng(3)
    velocity, density = rng.normal(size=(len(POINTS), 3)), rng.uniform(0.5, 2.0, len(POINTS))
    path = tmp_path / "compressible.vtu"
    write_vtu(
        path,
        POINTS,
        CELLS,
        np.full(len(CELLS), VTK_TETRA),
        {"Momentum": velocity * density[:, None], "Density": density},
    )
    field = fk.io.read(path, dtype="float64")
    np.testing.assert_allclose(np.asarray(field(0.0, jnp.asarray(POINTS[1]))), velocity[1], rtol=1e-12)
