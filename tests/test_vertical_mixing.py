"""Vertical mixing in an ocean: K(z) from a ROMS file's `AKs` or from a profile (constant,
wind-driven as OpenDrift computes it), Visser's drift term, random walks mirrored at the surface
and the sea floor of a `LayeredField`, and buoyant rise beside the mixing."""

import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from scipy import stats
from test_vtk import SHARED

import flowkit as fk
from flowkit.diffusion import Profile, Vertical, WindDriven

OCEAN = SHARED / "ocean-real"
H = 20.0


def still_column(depth: float = H, levels: int = 11) -> fk.fields.LayeredField:
    """A 1 km square of still water `depth` metres deep on a flat floor (metres, not degrees)."""
    points = np.array([[0.0, 0.0], [1000.0, 0.0], [1000.0, 1000.0], [0.0, 1000.0]])
    depths = np.broadcast_to(np.linspace(0, depth, levels), (1, 4, levels))
    return fk.fields.LayeredField(
        points, [[0, 1, 2, 3]], depths, np.zeros((1, 4, levels, 3)), np.full((1, 4), depth), spherical=False
    )


def column_seeds(n: int, rng, depth: float = H) -> np.ndarray:
    return np.column_stack([rng.uniform(100, 900, (n, 2)), rng.uniform(0, depth, n)])


def test_a_well_mixed_layered_column_stays_mixed_under_a_parabolic_profile():
    """The issue's test in an ocean field: K(z) = 4 K0 z (H - z) / H² as a `Profile` of 81
    depths, the walk mirrored at the surface and the floor by the `LayeredField` itself (no
    boundary given), 6 h of 60 s steps: KS distance to uniform <= 0.015 at N = 20 000."""
    z = np.linspace(0, H, 81)
    profile = Profile(z, 0.01 * 4 * z * (H - z) / H**2)
    seeds = column_seeds(20_000, np.random.default_rng(7))
    traj = fk.track(
        still_column(),
        seeds,
        0.0,
        6 * 3600.0,
        60.0,
        integrator=fk.EulerMaruyama(Vertical(profile)),
        key=jax.random.key(8),
        save_every=360,
    )
    depth = traj.positions[-1, :, 2]
    assert depth.min() >= 0 and depth.max() <= H
    assert stats.kstest(depth / H, "uniform").statistic <= 0.015
    np.testing.assert_array_equal(traj.positions[-1, :, :2], seeds[:, :2].astype(np.float32))  # vertical only


def test_buoyant_particles_settle_into_the_exponential_profile_of_rise_against_mixing():
    """Rising at 1 mm/s against constant K = 0.01 m²/s in a 20 m column, particles reach the
    steady profile C(z) ∝ exp(-z w / K): mean depth L - H / (e^{H/L} - 1) with L = K / w."""
    k, w = 0.01, 1e-3
    length = k / w
    expected = length - H / np.expm1(H / length)
    traj = fk.track(
        still_column(),
        column_seeds(5000, np.random.default_rng(9)),
        0.0,
        24 * 3600.0,
        60.0,
        integrator=fk.EulerMaruyama(Vertical(k)),
        particles=fk.particles.Buoyant(-w),
        key=jax.random.key(10),
        save_every=1440,
    )
    assert abs(traj.positions[-1, :, 2].mean() - expected) < 0.3


def test_wind_driven_profiles_are_opendrifts():
    """Sundby (1983) and Large et al. (1994) as OpenDrift's `physics_methods` write them, at
    depths inside the mixed layer; below it the background; a ramp over the last metre."""
    mld, background = 30.0, 1e-5
    depth = np.array([0.0, 2.5, 10.0, 20.0, 28.9])
    for wind in (3.0, 12.0):
        sundby = WindDriven(wind, mld, background)
        large = WindDriven(wind, mld, background, model="windspeed_Large1994")
        at = lambda f, z: float(f(0.0, jnp.asarray([0.0, 0.0, z])))  # noqa: E731
        np.testing.assert_allclose([at(sundby, z) for z in depth], 76.1e-4 + 2.26e-4 * wind**2, rtol=1e-6)
        sigma = depth / mld
        by_hand = mld * 0.2 * 0.4 * (sigma - 2 * sigma**2 + sigma**3) * wind**2 * 1.25e-3 * 1.22 + sigma * background
        np.testing.assert_allclose([at(large, z) for z in depth], by_hand, rtol=1e-5)
        assert at(sundby, 31.0) == pytest.approx(background) and at(large, 45.0) == pytest.approx(background)
        top = 76.1e-4 + 2.26e-4 * wind**2
        assert at(sundby, mld - 0.5) == pytest.approx((top + background) / 2, rel=1e-5)
    with pytest.raises(ValueError, match="WindDriven: model must be"):
        WindDriven(5.0, model="Sundby")


@pytest.mark.skipif(not (OCEAN / "Nordic_subset.nc").exists(), reason="../shared/data/ocean-real is not here")
def test_aks_profile_from_a_roms_file_is_the_files_column_at_its_w_depths(tmp_path):
    """ROMS' `AKs` on the w-levels, written into a copy of the real Nordic file: the profile at
    a point is the nearest wet column's values at the w-levels' depths below the free surface
    (Vtransform 2 written out by hand from `h`, `zeta`, `hc`, `Cs_w`, `s_w`), per time."""
    path = tmp_path / "nordic_aks.nc"
    shutil.copy(OCEAN / "Nordic_subset.nc", path)
    with xr.open_dataset(path) as ds:
        ds = ds.load()
    shape = (ds.sizes["ocean_time"], ds.sizes["s_w"], ds.sizes["eta_rho"], ds.sizes["xi_rho"])
    aks = np.random.default_rng(11).uniform(1e-5, 1e-2, shape).astype(np.float32)
    added = xr.Dataset({"AKs": (("ocean_time", "s_w", "eta_rho", "xi_rho"), aks, {"units": "meter2 second-1"})})
    added.to_netcdf(path, mode="a")  # beside the model's own variables, as ROMS writes it
    j, i = 10, 15
    assert ds.mask_rho.values[j, i] == 1
    lon, lat = float(ds.lon_rho.values[j, i]), float(ds.lat_rho.values[j, i])
    profile = Profile.from_roms(path, "AKs", lon, lat)
    h, hc = float(ds.h.values[j, i]), float(ds.hc.values)
    assert int(ds.Vtransform.values) == 2
    for k in range(3):
        zeta = float(ds.zeta.values[k, j, i])
        z = zeta + (zeta + h) * (hc * ds.s_w.values + h * ds.Cs_w.values) / (hc + h)
        below = zeta - z  # depth below the free surface, bottom first
        t = k * 86400.0
        got = [float(profile(t, jnp.asarray([lon, lat, d]))) for d in below[1:-1]]
        np.testing.assert_allclose(got, aks[k, 1:-1, j, i], rtol=1e-5)
    with pytest.raises(ValueError, match=r"nordic_aks.nc: temp has dims .* expected \(time, 's_w'"):
        Profile.from_roms(path, "temp")
    # the real file's currents with that mixing: the walk stays between its surface and its floor
    field = fk.io.read(path)
    wet = np.argwhere(ds.mask_rho.values[1:-1, 1:-1] == 1)[::2][:200] + 1
    seeds = np.column_stack(
        [ds.lon_rho.values[wet[:, 0], wet[:, 1]], ds.lat_rho.values[wet[:, 0], wet[:, 1]], np.full(len(wet), 5.0)]
    )
    mixing = fk.diffusion.Horizontal(0.0, Profile(below[::-1], 50 * aks[0, ::-1, j, i]))
    traj = fk.track(field, seeds, 0.0, 12 * 3600.0, 600.0, fk.EulerMaruyama(mixing), key=jax.random.key(12))
    active = traj.status[-1] == fk.Status.ACTIVE
    floor = field.water_depth(12 * 3600.0, traj.positions[-1, active, :2])
    depth = traj.positions[-1, active, 2]
    assert active.sum() >= 0.9 * len(seeds) and np.all(depth >= 0) and np.all(depth <= floor + 1e-3)
    assert np.std(depth) > 1.0  # they did mix
