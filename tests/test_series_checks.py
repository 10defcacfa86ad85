"""Every file of a series read by its own metadata (the fourth fault sweep, issue 79): a later
file's velocity units converted as its own say, and a velocity missing everywhere refused by
every reader, as ROMS, NEMO and the CF row already did."""

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from test_nemo import NEMO
from test_real_corpus import REAL

import flowkit as fk

FVCOM = REAL / "fvcom_sfbofs/tri_grid_example-FVCOM.nc"
SCHISM = REAL / "schism_v10/demo_hindcast_schisim3D_00.nc"
needs_corpus = pytest.mark.skipif(
    not FVCOM.exists(), reason="the corpus ../shared/data/real is not beside this checkout"
)


def _write(ds: xr.Dataset, path):
    ds.to_netcdf(path)
    return path


@needs_corpus
def test_a_later_fvcom_file_in_cm_per_s_is_converted_by_its_own_units(tmp_path):
    ds = xr.open_dataset(FVCOM)
    first, second = ds.isel(time=slice(0, 5)), ds.isel(time=slice(5, None))
    second = second.assign(u=second.u * 100, v=second.v * 100)
    for name in ("u", "v"):
        second[name].attrs = dict(ds[name].attrs, units="cm s-1")
    paths = [_write(first, tmp_path / "a.nc"), _write(second, tmp_path / "b.nc")]
    split = fk.io.read(paths, dtype="float64")
    whole = fk.io.read(FVCOM, dtype="float64")
    x = jnp.asarray([float(ds.lonc[100]), float(ds.latc[100]), 1.0])
    for t in (3600.0, 7.5 * 3600):
        np.testing.assert_allclose(np.asarray(split(t, x)), np.asarray(whole(t, x)), rtol=1e-6)


def test_a_later_nemo_day_in_cm_per_s_is_converted_by_its_own_units(tmp_path):
    for path in sorted(NEMO.glob("*.nc")):
        if "20000109" in path.name:  # day 2 in cm/s
            ds = xr.open_dataset(path)
            name = "uo" if "uo" in ds else "vo"
            ds[name] = ds[name] * 100
            ds[name].attrs["units"] = "cm/s"
            ds.to_netcdf(tmp_path / path.name)
        else:
            shutil.copy(path, tmp_path / path.name)
    converted = fk.io.read(str(tmp_path / "*.nc"), dtype="float64")
    original = fk.io.read(str(NEMO / "*.nc"), dtype="float64")
    seeds = fk.seeding.random_inside(20, original, key=jax.random.key(0))
    for x in jnp.asarray(seeds):
        np.testing.assert_allclose(np.asarray(converted(432000.0, x)), np.asarray(original(432000.0, x)), rtol=1e-6)


@needs_corpus
@pytest.mark.parametrize("case", ["fvcom", "schism"])
def test_a_velocity_missing_everywhere_is_refused_naming_the_file(tmp_path, case):
    if case == "fvcom":
        ds = xr.open_dataset(FVCOM)
        ds = ds.assign(u=ds.u * np.nan, v=ds.v * np.nan)
        ds.u.attrs, ds.v.attrs = xr.open_dataset(FVCOM).u.attrs, xr.open_dataset(FVCOM).v.attrs
        expected = r"broken\.nc: velocity 'u' is NaN everywhere at time step 0"
    else:
        ds = xr.open_dataset(SCHISM, mask_and_scale=False)
        ds["hvel"] = ds.hvel.copy(data=np.full(ds.hvel.shape, -99.0, ds.hvel.dtype))
        ds["hvel"].attrs["missing_value"] = -99.0
        expected = r"broken\.nc: velocity 'hvel' is NaN everywhere at time step 0"
    ds.to_netcdf(tmp_path / "broken.nc")
    with pytest.raises(ValueError, match=expected):
        fk.io.read(tmp_path / "broken.nc")


def test_a_nemo_file_from_another_window_or_another_model_is_refused_naming_it(tmp_path):
    """Day 2's V file cut 20 rows away (its nav_lon/nav_lat rolled), or an FVCOM file among
    NEMO's, was read on the first files' grid or dropped without a word."""
    for path in sorted(NEMO.glob("*.nc")):
        if "20000109d05V" in path.name:
            ds = xr.open_dataset(path)
            ds = ds.assign_coords(nav_lon=ds.nav_lon.roll(y=20, roll_coords=False), nav_lat=ds.nav_lat.roll(y=20))
            ds.to_netcdf(tmp_path / path.name)
        else:
            shutil.copy(path, tmp_path / path.name)
    with pytest.raises(ValueError, match=r"20000109d05V\.nc: its nav_lon differs from .*20000104d05V\.nc's"):
        fk.io.read(str(tmp_path / "*.nc"))
    if FVCOM.exists():
        files = sorted(str(p) for p in NEMO.glob("*.nc")) + [str(FVCOM)]
        with pytest.raises(
            ValueError, match=r"different models: NEMO: .*and 2 more; FVCOM: .*tri_grid_example-FVCOM\.nc; read each"
        ):
            fk.io.read(files)


@needs_corpus
def test_an_fvcom_file_with_its_nodes_renumbered_is_refused_naming_it(tmp_path):
    ds = xr.open_dataset(FVCOM)
    first, second = ds.isel(time=slice(0, 5)), ds.isel(time=slice(5, None))
    order = np.random.default_rng(0).permutation(ds.sizes["node"])
    renumbered = second.isel(node=order)
    renumbered["nv"] = second.nv.copy(data=np.argsort(order)[second.nv.values - 1] + 1)
    first.to_netcdf(tmp_path / "a.nc")
    renumbered.to_netcdf(tmp_path / "b.nc")
    with pytest.raises(ValueError, match=r"b\.nc: its lon differs from .*a\.nc's"):
        fk.io.read([tmp_path / "a.nc", tmp_path / "b.nc"])
