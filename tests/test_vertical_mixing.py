"""Vertical mixing in an ocean: K(z) from a ROMS file's `AKs` or from a profile (constant,
wind-driven as OpenDrift computes it), Visser's drift term, random walks mirrored at the surface
and the sea floor of a `LayeredField`, and buoyant rise beside the mixing."""

import shutil

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from scipy import stats
from test_vtk import SHARED

import flowkit as fk
from flowkit.diffusion import Profile, Vertical, WindDriven
from flowkit.io.ocean.roms import column_profile

OCEAN = SHARED / "ocean-real"
H = 20.0


def still_column(depth: float = H, levels: int = 11) -> fk.fields.LayeredField:
    """A 1 km square of still water `depth` metres deep on a flat floor (metres, not degrees)."""
    points = np.array([[0.0, 0.0], [1000.0, 0.0], [1000.0, 1000.0], [0.0, 1000.0]])
    depths = np.broadcast_to(np.linspace(0, depth, levels), (1, 4, levels))
    return fk.fields.LayeredField.from_arrays(
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
    profile = column_profile(path, "AKs", lon, lat)
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
        column_profile(path, "temp")
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
    assert active.sum() >= 0.85 * len(seeds) and np.all(depth >= 0) and np.all(depth <= floor + 1e-3)
    # the others reached land or left through the subset's open edges (which of those few near
    # an edge leave depends on the walk's rounding), nothing else
    left = traj.status[-1] == fk.Status.OUT_OF_DOMAIN
    assert set(np.unique(traj.status[-1]).tolist()) <= {fk.Status.ACTIVE, fk.Status.BEACHED, fk.Status.OUT_OF_DOMAIN}
    for lon_last, lat_last in traj.positions[-1, left, :2]:
        d = (ds.lon_rho.values - lon_last) ** 2 + (ds.lat_rho.values - lat_last) ** 2
        j, i = np.unravel_index(np.argmin(d), d.shape)
        assert min(j, i, d.shape[0] - 1 - j, d.shape[1] - 1 - i) <= 3
    assert np.std(depth) > 1.0  # they did mix


def still_nordic_with_aks(path, k0: float = 0.1):
    """The real Nordic file with its currents and free surface stilled and ROMS' `AKs` added on
    the w-levels: parabolic in each column, `k0 (1 + xi/30) 4 s (1 + s)` (zero at the surface
    and the floor, varying from column to column). Returns the dataset and the `AKs` array."""
    with xr.open_dataset(OCEAN / "Nordic_subset.nc") as ds:
        ds = ds.load()
    s_w = ds.s_w.values
    column = 1 + np.arange(ds.sizes["xi_rho"]) / 30.0
    aks = k0 * column[None, None, None, :] * (4 * -s_w * (1 + s_w))[None, :, None, None]
    aks = np.broadcast_to(aks, (ds.sizes["ocean_time"], len(s_w), ds.sizes["eta_rho"], ds.sizes["xi_rho"]))
    ds["AKs"] = (("ocean_time", "s_w", "eta_rho", "xi_rho"), aks.astype(np.float32), {"units": "meter2 second-1"})
    for name in ("u", "v", "zeta"):
        ds[name] = ds[name] * 0
    for var in ds.variables.values():
        var.encoding.clear()  # written as loaded (the file packs some scalars as integers)
    ds.to_netcdf(path)
    return ds, aks


@pytest.mark.skipif(not (OCEAN / "Nordic_subset.nc").exists(), reason="../shared/data/ocean-real is not here")
def test_aks_at_each_particle_from_a_roms_file_mixes_each_column_by_its_own_diffusivity(tmp_path):
    """`fk.io.read(roms, sample=["AKs"])` and `Vertical("AKs")`: the diffusivity at a particle is
    the file's `AKs` of its own column, taken at the rho levels (the mean of the w-levels around
    each, as `w` is) and linear in depth between them, checked by hand at a point from `h`,
    `hc`, `Cs_r`, `s_rho`; the drift correction is that profile's slope (differentiated
    through the field's sampling); and a column filled uniformly stays uniform under it."""
    ds, aks = still_nordic_with_aks(tmp_path / "still.nc")
    field = fk.io.read(tmp_path / "still.nc", sample=["AKs"])
    j, i = 10, 15
    h, hc = float(ds.h.values[j, i]), float(ds.hc.values)
    s, curve = ds.s_rho.values, ds.Cs_r.values
    depth = -(hc * s + h * curve) / (hc + h) * h  # below the surface (zeta = 0), bottom first
    on_rho = 0.5 * (aks[0, :-1, j, i] + aks[0, 1:, j, i])
    k = 20
    z = 0.3 * depth[k] + 0.7 * depth[k + 1]
    x = jnp.asarray([float(ds.lon_rho.values[j, i]), float(ds.lat_rho.values[j, i]), z], jnp.float32)
    expected = 0.3 * on_rho[k] + 0.7 * on_rho[k + 1]
    mixing = Vertical("AKs")
    assert mixing.sample_names == {"AKs"}

    @eqx.filter_jit  # one compiled program, not the field's loops op by op
    def at(field, x):
        def sampler(y):
            return {n: v[0] for n, v in field.samples_at(0.0, y[None], field.hints(1, y.dtype)).items()}

        return sampler(x)["AKs"], mixing.drift_correction(0.0, x, sampler)[2], mixing(0.0, x, sampler)[2]

    got, correction, diffusivity = at(field, x)
    np.testing.assert_allclose(float(got), expected, rtol=1e-4)
    slope = (on_rho[k + 1] - on_rho[k]) / (depth[k + 1] - depth[k])
    np.testing.assert_allclose(float(correction), slope, rtol=1e-3)
    np.testing.assert_allclose(float(diffusivity), expected, rtol=1e-4)

    rng = np.random.default_rng(5)
    wet = np.argwhere((ds.mask_rho.values == 1) & (ds.h.values < 200))
    wet = wet[rng.integers(0, len(wet), 4000)]
    floor = ds.h.values[wet[:, 0], wet[:, 1]]
    sigma = rng.uniform(0, 1, len(wet))
    seeds = np.column_stack(
        [ds.lon_rho.values[wet[:, 0], wet[:, 1]], ds.lat_rho.values[wet[:, 0], wet[:, 1]], sigma * floor]
    )
    traj = fk.track(field, seeds, 0.0, 6 * 3600.0, 300.0, fk.EulerMaruyama(mixing), key=jax.random.key(3))
    moved = np.abs(traj.positions[-1, :, 2] - seeds[:, 2])
    assert np.median(moved) > 10.0  # the columns did mix (tens of metres in 6 h)
    assert stats.kstest(traj.positions[-1, :, 2] / floor, "uniform").statistic < 0.03
    with pytest.raises(ValueError, match=r"its diffusivity reads the sampled \['AKt'\]"):
        fk.track(field, seeds[:4], 0.0, 600.0, 300.0, fk.EulerMaruyama(Vertical("AKt")), key=jax.random.key(3))
    with pytest.raises(ValueError, match=r"still.nc: sample variable 'AKt' is not in the file"):
        fk.io.read(tmp_path / "still.nc", sample=["AKt"])
    with pytest.raises(ValueError, match=r"still.nc: sample variable 'u' has dims .* lie on the rho points"):
        fk.io.read(tmp_path / "still.nc", sample=["u"])
    flat = fk.io.read(tmp_path / "still.nc", sample="h")  # 2-D: the same at every depth
    deep = x.at[2].set(0.9 * h)
    np.testing.assert_allclose(float(flat.samples_at(0.0, deep[None], flat.hints(1, x.dtype))["h"][0]), h, rtol=1e-5)


def test_wind_driven_mixing_reads_the_wind_forcing_at_each_particle():
    """`WindDriven("wind")`: the mixing at each particle follows the speed of the wind forcing
    there (a wind growing across the column's square), as OpenDrift reads its wind reader at
    each element; a field without that forcing is refused before the run."""
    xs = np.linspace(-100.0, 1100.0, 7)
    east = np.broadcast_to((2 + 10 * xs / 1000)[:, None], (7, 7))
    wind = fk.GridField.from_arrays(np.stack([east, np.full((7, 7), 3.0)], axis=-1), [xs, xs], spherical=False)
    column = still_column()
    points, depths = np.asarray(column.surface.points), np.broadcast_to(np.linspace(0, H, 11), (1, 4, 11))
    field = fk.fields.LayeredField.from_arrays(
        points, [[0, 1, 2, 3]], depths, np.zeros((1, 4, 11, 3)), np.full((1, 4), H), spherical=False,
        samples={"wind": wind},
    )  # fmt: skip
    mixing = Vertical(WindDriven("wind", mixed_layer_depth=15.0, background=1e-5))
    assert mixing.sample_names == {"wind"}
    for x in ([100.0, 500.0, 4.0], [900.0, 200.0, 12.0], [500.0, 500.0, 18.0]):
        x = jnp.asarray(x)

        def sampler(y):
            return {n: v[0] for n, v in field.samples_at(0.0, y[None], field.hints(1, y.dtype)).items()}

        speed = np.hypot(2 + 10 * float(x[0]) / 1000, 3.0)
        by_hand = WindDriven(speed, mixed_layer_depth=15.0, background=1e-5)(0.0, x)
        np.testing.assert_allclose(float(mixing(0.0, x, sampler)[2]), float(by_hand), rtol=1e-5)
    rng = np.random.default_rng(2)
    traj = fk.track(field, column_seeds(500, rng), 0.0, 3600.0, 60.0, fk.EulerMaruyama(mixing), key=jax.random.key(2))
    assert (traj.status[-1] == fk.Status.ACTIVE).all() and np.std(traj.positions[-1, :, 2]) > 1.0
    with pytest.raises(ValueError, match=r"its diffusivity reads the sampled \['wind'\]"):
        fk.track(column, column_seeds(4, rng), 0.0, 600.0, 60.0, fk.EulerMaruyama(mixing), key=jax.random.key(2))
