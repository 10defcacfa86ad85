"""Fish eggs and larvae (OpenDrift's PelagicEggDrift, LADIM, Ichthyop): the terminal velocity in
each flow regime against its published forms, the rise through a column against an independent
integration with TEOS-10 itself, the well-mixed steady state, hatching, mortality and the larvae's
migration by the sun."""

import gsw
import jax
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from test_vertical_mixing import H, column_seeds

import flowkit as fk
from flowkit._time import TimeOrigin
from flowkit.diffusion import Vertical
from flowkit.particles import Larva, PelagicEgg, Seawater, neutral_salinity, terminal_velocity, viscosity


def rho(salinity, temperature, depth):
    absolute = gsw.SR_from_SP(salinity)
    return gsw.rho(absolute, gsw.CT_from_pt(absolute, temperature), depth)


def column(temperature=5.0, salinity=34.0, origin=None) -> fk.fields.LayeredField:
    """A still 20 m column of uniform water, with the temperature and salinity sampled as ROMS names them."""
    points = np.array([[0.0, 0.0], [1000.0, 0.0], [1000.0, 1000.0], [0.0, 1000.0]])
    depths = np.broadcast_to(np.linspace(0, H, 11), (1, 4, 11))
    uniform = {"temp": np.full((1, 4, 11), temperature), "salt": np.full((1, 4, 11), salinity)}
    return fk.fields.LayeredField.from_arrays(
        points, [[0, 1, 2, 3]], depths, np.zeros((1, 4, 11, 3)), np.full((1, 4), H), spherical=False,
        samples=uniform, time_origin=origin,
    )  # fmt: skip


def test_the_density_table_is_teos10():
    rng = np.random.default_rng(0)
    s, t, z = rng.uniform(2, 42, 500), rng.uniform(-2, 35, 500), rng.uniform(0, 2000, 500)
    table = np.asarray(jax.vmap(Seawater().density)(s, t, z))
    np.testing.assert_allclose(table, rho(s, t, z), atol=1e-3)
    # what moves an egg is the difference at one temperature and pressure: to 0.2 %
    fresher = np.asarray(jax.vmap(Seawater().density)(s - 2, t, z))
    np.testing.assert_allclose(table - fresher, rho(s, t, z) - rho(s - 2, t, z), rtol=2e-3)
    assert neutral_salinity(float(rho(31.25, 5.0, 0.0)), 5.0) == pytest.approx(31.25, abs=1e-4)


def test_terminal_velocity_in_each_regime():
    """Sharqawy et al. (2010)'s viscosity at 35 g/kg (their Table: 1.39 mPa s at 10 °C); Stokes'
    law below Re 0.5; above it Sundby (1983)'s formula in its own cgs units."""
    mu = float(viscosity(10.0, 35.0))
    assert mu == pytest.approx(1.39e-3, rel=0.01)
    water, egg = 1027.0, 1025.0
    small = float(terminal_velocity(2e-4, water, egg, mu))
    assert small == pytest.approx(9.81 * 2e-4**2 * 2.0 / (18 * mu), rel=1e-6)
    assert float(terminal_velocity(2e-4, egg, water, mu)) == pytest.approx(-small, rel=1e-6)  # it sinks alike
    d_cm, rho_cgs, drho_cgs, mu_cgs = 0.15, water / 1000, 2.0 / 1000, 10 * mu
    nu = mu_cgs / rho_cgs
    d0 = d_cm - 0.4 * (9 * nu**2 / 981 * rho_cgs / drho_cgs) ** (1 / 3)
    sundby = 19 * d0 * drho_cgs ** (2 / 3) * mu_cgs ** (-1 / 3) / 100  # cm/s to m/s
    assert 9.81 * 1.5e-3**2 * 2.0 / (18 * mu) * 1.5e-3 * water / mu > 0.5  # the transitional regime
    assert float(terminal_velocity(1.5e-3, water, egg, mu)) == pytest.approx(sundby, rel=1e-6)


def test_eggs_rise_through_the_column_as_teos10_says():
    """No mixing: each egg's depth follows dz/dt = -w(z), with w from gsw's own densities at the
    egg's pressure, integrated by SciPy."""
    seeds = column_seeds(50, np.random.default_rng(1)) * [1, 1, 0.5] + [0, 0, 10]
    traj = fk.track(column(), seeds, 0.0, 3600.0, 60.0, particles=PelagicEgg(), dtype="float64", save_every=60)
    mu = float(viscosity(5.0, 34.0))

    def rate(t, z):
        w = terminal_velocity(0.0014, rho(34.0, 5.0, z[0]), rho(31.25, 5.0, z[0]), mu)
        return [-float(w)]

    for z0, z1 in zip(seeds[:5, 2], traj.positions[-1, :5, 2], strict=True):
        expected = solve_ivp(rate, (0, 3600), [z0], rtol=1e-10).y[0, -1]
        assert z1 == pytest.approx(expected, abs=2e-3)
    assert np.all(traj.positions[-1, :, 2] < seeds[:, 2] - 3)


def test_mixed_eggs_settle_into_the_exponential_profile():
    """Constant K against the eggs' rise w: C(z) ∝ exp(-z w / K), mean depth L - H / (e^{H/L} - 1)."""
    k = 0.01
    traj = fk.track(
        column(), column_seeds(4000, np.random.default_rng(2)), 0.0, 6 * 3600.0, 20.0,
        fk.EulerMaruyama(Vertical(k)), particles=PelagicEgg(), key=jax.random.key(3), save_every=1080,
    )  # fmt: skip
    w = float(terminal_velocity(0.0014, rho(34.0, 5.0, 5.0), rho(31.25, 5.0, 5.0), float(viscosity(5.0, 34.0))))
    length = k / w
    depth = np.asarray(traj.positions[-1, :, 2])
    np.testing.assert_allclose(depth.mean(), length - H / np.expm1(H / length), rtol=0.06)


def test_constant_forcings_are_logged_and_used(caplog):
    seeds = column_seeds(5, np.random.default_rng(6)) * [1, 1, 0.5] + [0, 0, 10]
    read = fk.track(column(temperature=3.0, salinity=33.0), seeds, 0.0, 600.0, 60.0, particles=PelagicEgg())
    with caplog.at_level("INFO", logger="flowkit"):
        given = fk.track(column(), seeds, 0.0, 600.0, 60.0, particles=PelagicEgg(temperature=3.0, salinity=33.0))
    assert "PelagicEgg: temperature a constant 3°C" in caplog.text and "salinity a constant 33" in caplog.text
    np.testing.assert_allclose(given.positions, read.positions, rtol=1e-6)


def test_hatching_by_age_or_degree_days_and_mortality():
    seeds = column_seeds(20, np.random.default_rng(4))
    eggs = PelagicEgg(hatch_days=1.0, hatch_degree_days=5.0, mortality=0.2)  # 5 °C: 5 degree-days at 1 day
    traj = fk.track(column(temperature=8.0), seeds, 0.0, 2 * 86400.0, 600.0, particles=eggs, save_every=6)
    hours = np.asarray(traj.times) / 3600
    stage, days = np.asarray(traj.variables["stage"][:, 0]), np.asarray(traj.variables["degree_days"][:, 0])
    np.testing.assert_allclose(days, 8.0 * hours / 24, rtol=1e-5)
    assert np.all(stage[hours < 15] == 0) and np.all(stage[hours >= 16] == 1)  # 5 / 8 days = 15 h
    np.testing.assert_allclose(traj.variables["survival"][:, 0], np.exp(-0.2 * hours / 24), rtol=1e-5)
    by_age = fk.track(column(temperature=2.0), seeds, 0.0, 2 * 86400.0, 600.0, particles=eggs, save_every=6)
    stage = np.asarray(by_age.variables["stage"][:, 0])
    assert np.all(stage[hours < 24] == 0) and np.all(stage[hours >= 25] == 1)


def test_larvae_migrate_between_day_and_night_depths_by_the_sun():
    """Midsummer at 45° N, 0° E: the sun is up from about 04:20 to 19:40 UTC."""
    origin = TimeOrigin("2024-06-21T00:00:00", "seconds since 2024-06-21", "standard")
    larva = Larva(day_depth=15.0, night_depth=3.0, swim_speed=5e-3, site=(0.0, 45.0))
    traj = fk.track(
        column(origin=origin), column_seeds(10, np.random.default_rng(5)), 0.0, 86400.0, 60.0,
        particles=PelagicEgg(hatch_days=0.0, larva=larva), save_every=60,
    )  # fmt: skip
    hours = np.asarray(traj.times) / 3600
    depth = np.asarray(traj.positions[:, :, 2])
    np.testing.assert_allclose(depth[(hours >= 3) & (hours <= 4)], 3.0, atol=0.05)
    np.testing.assert_allclose(depth[(hours >= 10) & (hours <= 19)], 15.0, atol=0.05)
    np.testing.assert_allclose(depth[hours >= 23], 3.0, atol=0.05)
    with pytest.raises(ValueError, match="needs the field's dates"):
        fk.track(column(), column_seeds(2, np.random.default_rng(5)), 0.0, 600.0, 60.0,
                 particles=PelagicEgg(larva=larva))  # fmt: skip
