"""Damaged or mismatched inputs the fourth fault sweep (issue 79) found unclear, each now one
line naming the file and what is wrong with it: VTK series with a truncated middle file or two
files at one time, FVCOM's blank `Times`, zero bathymetry and NaN coordinates, SCHISM's bottom
index past its levels, one model's grid file given to another, and files of two models."""

import re
import shutil
from pathlib import Path

import h5netcdf
import numpy as np
import pytest
from test_nemo import NEMO

import flowkit as fk

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real"
OCEAN = REAL.parent / "ocean-real"
FVCOM = REAL / "fvcom_sfbofs/tri_grid_example-FVCOM.nc"
SCHISM = REAL / "schism_v10/demo_hindcast_schisim3D_00.nc"
ADCIRC = REAL / "adcirc_quarterannular/fort.64.nc"
needs_corpus = pytest.mark.skipif(
    not FVCOM.exists(), reason="the corpus ../shared/data/real is not beside this checkout"
)


def _edited(source: Path, target: Path, name: str, change) -> Path:
    """A copy of `source` with variable `name` replaced by `change(values)`, its other bytes
    as the model wrote them."""
    shutil.copy(source, target)
    target.chmod(0o644)
    with h5netcdf.File(target, "r+") as file:
        variable = file.variables[name]
        variable[...] = change(variable[...])
    return target


def test_a_truncated_middle_file_of_a_vtu_series_is_named(tmp_path):
    pvd = fk.datasets.cellular_flow_vtu_series(tmp_path, shape=(5, 5, 5), times=[0.0, 1.0, 2.0, 3.0])
    middle = sorted(tmp_path.rglob("*.vtu"))[2]
    middle.write_bytes(middle.read_bytes()[: middle.stat().st_size // 2])
    for stream in (False, True):
        with pytest.raises(ValueError, match=rf"{re.escape(middle.name)}: VTK could not read this file \(truncated"):
            field = fk.io.read(pvd, stream=stream)
            fk.track(field, np.full((1, 3), 0.5), 0.0, 3.0, 0.5)


def test_two_files_of_a_pvd_at_one_time_are_named_and_a_missing_timestep_is_the_files_own(tmp_path):
    pvd = fk.datasets.double_gyre_vti_series(tmp_path, nx=21, ny=11, times=[0.0, 1.0, 2.0, 3.0])
    text = pvd.read_text()
    pvd.write_text(text.replace('timestep="2.0"', 'timestep="1.0"'))
    with pytest.raises(ValueError, match=r"double_gyre\.pvd: .*_0_1\.vti and .*_0_2\.vti have the same time 1; each"):
        fk.io.read(pvd)
    pvd.write_text(text.replace('timestep="2.0"', 'timestep="nan"'))  # the file's TimeValue is then its time
    np.testing.assert_array_equal(np.asarray(fk.io.read(pvd).times), [0.0, 1.0, 2.0, 3.0])


@needs_corpus
def test_fvcoms_blank_times_are_warned_and_its_time_variable_taken(tmp_path, caplog):
    path = _edited(FVCOM, tmp_path / "blank.nc", "Times", lambda a: np.full_like(a, b" " * a.dtype.itemsize))
    with caplog.at_level("WARNING", logger="flowkit"):
        blank = fk.io.read(path)
    assert "its Times are blank at 10 of 10 steps: times from 'time'" in caplog.text
    exact = np.asarray(fk.io.read(FVCOM).times, np.float64)
    assert np.max(np.abs(np.asarray(blank.times, np.float64) - exact)) < 600  # float32 days: minutes apart


@needs_corpus
def test_fvcoms_zero_bathymetry_and_nan_coordinates_are_named(tmp_path):
    zero = _edited(FVCOM, tmp_path / "h0.nc", "h", lambda a: a * 0)
    with pytest.raises(ValueError, match=r"h0\.nc: the bathymetry 'h' is 0 or above the surface at every node"):
        fk.io.read(zero)

    def holed(values):
        values = values.copy()
        values[3:28] = np.nan
        return values

    nan = _edited(FVCOM, tmp_path / "nan.nc", "lon", holed)
    with pytest.raises(
        ValueError, match=r"nan\.nc: the node coordinates 'lon', 'lat' are not finite at 25 of 551 nodes"
    ):
        fk.io.read(nan)


@needs_corpus
def test_schisms_bottom_index_past_its_levels_is_named(tmp_path):
    path = _edited(SCHISM, tmp_path / "bottom.nc", "node_bottom_index", lambda a: a * 0 + 14)
    with pytest.raises(ValueError, match=r"bottom\.nc: 'node_bottom_index' lies outside the 9 levels .* at 668 of 668"):
        fk.io.read(path)


@needs_corpus
def test_files_of_two_models_are_refused_naming_each_model(tmp_path):
    for files in ([ADCIRC, FVCOM], [FVCOM, ADCIRC]):
        with pytest.raises(
            ValueError, match=r"^the files are of different models: .*; read each model's files apart$"
        ) as e:
            fk.io.read(files)
        assert f"FVCOM: {FVCOM}" in str(e.value) and f"ADCIRC, Delft3D-FM): {ADCIRC}" in str(e.value)


def test_a_grid_file_of_another_model_or_damaged_is_named(tmp_path):
    files = sorted(NEMO.glob("ORCA*.nc"))
    croco_grid = OCEAN / "croco_grd.nc"
    if croco_grid.exists():
        with pytest.raises(ValueError, match=r"croco_grd\.nc: not a NEMO grid file \(that holds glamt/gphit or tmask"):
            fk.io.read(files, grid=croco_grid)
        with pytest.raises(ValueError, match=r"coordinates\.nc: not a ROMS/CROCO grid file \(that holds lon_rho, lat"):
            fk.io.read(OCEAN / "croco_his.nc", grid=NEMO / "coordinates.nc")
    cut = tmp_path / "coordinates.nc"
    cut.write_bytes((NEMO / "coordinates.nc").read_bytes()[:100_000])
    with pytest.raises(ValueError, match=r"coordinates\.nc: cannot be opened as NetCDF"):
        fk.io.read(files, grid=cut)


def test_a_mesh_with_points_that_are_not_finite_is_named(tmp_path):
    points, tets = fk.datasets.jittered_tet_box((4, 4, 4))
    points[[5, 9]] = np.nan
    path = fk.io.write_vtu(
        tmp_path / "holed.vtu", points, tets, np.full(len(tets), 10), {"velocity": np.ones_like(points)}
    )
    with pytest.raises(
        ValueError, match=r"holed\.vtu: 2 of 64 point coordinates are not finite \(the first: point 5\)"
    ):
        fk.io.read(path)
