"""Oil (issue 80): records found by name, properties equal to NOAA's `adios_db`, each weathering
scheme against its closed form, and runs whose mass budget sums to the released mass."""

import logging

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk
from flowkit.diffusion import Vertical
from flowkit.oil import OilType, records, weathering
from flowkit.particles import Oil

AASGARD = "AASGARD A 2003"
SITE = (4.0, 60.0)


@pytest.fixture(scope="module")
def aasgard() -> OilType:
    return OilType.named(AASGARD)


def still_sea(wind: float = 8.0) -> fk.fields.LayeredField:
    return fk.datasets.still_sea(wind, 200.0, SITE, size=4.0)


# records and properties


def test_an_oil_is_found_by_the_name_users_know_in_any_case_or_by_its_id(aasgard):
    assert aasgard.oil_id == "NO00108" and aasgard.name == AASGARD  # Norwegian oils carry their sample year
    assert OilType.named("aasgard a 2003").oil_id == "NO00108"
    assert OilType.named("NO00108").name == AASGARD
    assert "GENERIC BUNKER C" in records.names()
    # NOAA's generic oils come twice, in capitals and not: the spelling given chooses
    assert OilType.named("GENERIC DIESEL").oil_id != OilType.named("Generic Diesel").oil_id
    with pytest.raises(ValueError, match="generic diesel.*2 ADIOS records have this name: AD04007 .*GN00002"):
        OilType.named("generic diesel")


def test_an_unknown_or_shared_name_is_refused_with_the_candidates():
    with pytest.raises(ValueError, match="closest: .*'AASGARD A 2003'"):
        OilType.named("AASGARD")
    with pytest.raises(ValueError, match="2 ADIOS records have this name: AD00208 .* AD02051 .* give the id"):
        OilType.named("BUNKER C FUEL OIL")


@pytest.mark.parametrize("name", [AASGARD, "GENERIC BUNKER C", "GENERIC DIESEL"])
def test_density_and_viscosity_with_temperature_equal_adios_dbs(name):
    """The oil's density (interpolated, linear beyond the measurements) and kinematic viscosity
    (A exp(k/T)) as the compiled step computes them, against `adios_db`'s own at 0-35 °C."""
    from adios_db.computation import physical_properties
    from adios_db.models.oil.oil import Oil as AdiosOil

    oil = OilType.named(name)
    adios = AdiosOil.from_py_json(records.record(name))
    temps = np.linspace(268.15, 308.15, 9)
    density = physical_properties.Density(adios).at_temp(temps)
    np.testing.assert_allclose(np.asarray(jax.vmap(oil.density)(jnp.asarray(temps))), density, rtol=1e-12)
    kinematic = physical_properties.KinematicViscosity(adios).at_temp(temps)
    np.testing.assert_allclose(np.asarray(jax.vmap(oil.viscosity)(jnp.asarray(temps))), kinematic, rtol=1e-9)
    assert np.isclose(float(np.sum(oil.mass_fraction)), 1.0)


def test_each_pseudo_component_boils_at_one_atmosphere_at_its_boiling_point(aasgard):
    boiling = np.asarray(aasgard.boiling_point)
    pressures = np.asarray([aasgard.vapour_pressure(b)[i] for i, b in enumerate(boiling)])
    np.testing.assert_allclose(pressures, 101325.0, rtol=1e-12)
    cold, warm = np.asarray(aasgard.vapour_pressure(278.15)), np.asarray(aasgard.vapour_pressure(298.15))
    assert np.all(warm > cold) and np.all(np.diff(cold) <= 0)  # heavier cuts are less volatile


# weathering schemes against their closed forms


def test_one_component_evaporates_at_the_mass_transfer_of_its_vapour_pressure(aasgard):
    """For a single pseudo-component Raoult's law gives a constant flux A K P M / (R T)."""
    one = eqx.tree_at(lambda o: (o.boiling_point, o.molecular_weight, o.mass_fraction), aasgard,
                      (np.array([450.0]), np.array([0.15]), np.array([1.0])))  # fmt: skip
    area, wind, temperature = 120.0, 6.0, 285.0
    for mass in (3.0, 40.0):
        flux = -weathering.evaporation_rates(one, jnp.array([mass]), area, wind, temperature)[0] * mass
        pressure = float(one.vapour_pressure(temperature)[0])
        expected = area * 0.0025 * wind**0.78 * pressure * 0.15 / (8.314 * temperature)
        np.testing.assert_allclose(float(flux), expected, rtol=1e-6)
    assert float(weathering.mass_transfer(12.0)) == pytest.approx(0.06 * 0.0025 * 144.0)


def test_water_uptake_is_the_same_in_one_step_or_sixty(aasgard):
    """The interfacial area grows toward S_max as S_max (1 - exp(-k t / S_max)); the step
    integrates that growth exactly, so the step does not matter."""
    top, wind = 0.7, 9.0
    one = weathering.interfacial_area_after(aasgard, 0.0, wind, 3600.0, 3600.0, top)
    area = 0.0
    for k in range(1, 61):
        area = weathering.interfacial_area_after(aasgard, area, wind, 60.0 * k, 60.0, top)
    rate, smax = 6 * 2.024e-6 * wind**2 / 1e-5, 6 / 1e-6 * top / (1 - top)
    np.testing.assert_allclose([float(one), float(area)], smax * (1 - np.exp(-rate * 3600.0 / smax)), rtol=1e-9)
    assert float(weathering.water_fraction(1e12, top)) == pytest.approx(top)


def test_the_emulsions_viscosity_and_density():
    """Mooney: without water or evaporation the oil's own; the water raises it by
    (1 + (Y/0.84) / (1.187 - Y/0.84))^2.49; evaporation by exp(c F)."""
    nu = 4e-5
    assert float(weathering.emulsion_viscosity(nu, 0.0, 0.0)) == pytest.approx(nu)
    y = 0.5
    expected = nu * (1 + (y / 0.84) / (1.187 - y / 0.84)) ** 2.49
    assert float(weathering.emulsion_viscosity(nu, 0.0, y)) == pytest.approx(expected, rel=1e-6)
    c = np.clip(np.sqrt(nu) * 1.5e3, 1, 10)
    assert float(weathering.emulsion_viscosity(nu, 0.3, 0.0)) == pytest.approx(nu * np.exp(0.3 * c), rel=1e-6)
    assert float(weathering.emulsion_density(850.0, 1025.0, 0.4)) == pytest.approx(0.4 * 1025 + 0.6 * 850)


def test_natural_dispersion_follows_delvigne_and_sweeney():
    """q = 2400 exp(-73.682 √ν) (0.0034 ρ g H²)^0.57 f_bw 3.9e-8 per second; nothing in calm air."""
    nu, height, water, dt = 1e-4, 1.5, 1025.0, 600.0
    breaking = float(weathering.breaking_fraction(9.0, float(weathering.wave_period_from_wind(9.0))))
    roy = 2400 * np.exp(-73.682 * np.sqrt(nu))
    expected = roy * (0.0034 * water * 9.81 * height**2) ** 0.57 * breaking * 3.9e-8 * dt
    assert float(weathering.dispersed_fraction(nu, height, breaking, water, dt)) == pytest.approx(expected, rel=1e-6)
    assert float(weathering.breaking_fraction(4.0, 3.0)) == 0.0
    assert float(weathering.wave_height_from_wind(10.0)) == pytest.approx(2.46)


def test_entrained_droplets_are_log_normal_about_their_median_within_bounds(aasgard):
    median = float(weathering.median_droplet_johansen(aasgard, 1e-4, 850.0, 1e-3, 1.5))
    assert 1e-5 < median < 3e-3
    q = jnp.linspace(0.0005, 0.9995, 2000)
    drawn = np.asarray(jax.vmap(lambda u: weathering.droplet_diameter(median, u))(q))
    lo, hi = weathering.SPECTRUM_BOUNDS
    assert drawn.min() >= lo and drawn.max() <= hi and np.all(np.diff(drawn) >= 0)
    spread = np.std(np.log10(drawn[(drawn > lo * 1.01) & (drawn < hi * 0.99)]))
    assert spread < weathering.SPECTRUM_SPREAD * 1.01  # truncated: no wider than the spectrum
    li = float(weathering.median_droplet_li(aasgard, 1e-4, 850.0, 1025.0, 1.5))
    assert 1e-5 < li < 3e-3


def test_small_droplets_rise_by_stokes_law_and_large_ones_by_their_drag():
    d, oil, water, nu = 1e-4, 850.0, 1025.0, 1.3e-6
    stokes = 2 * 9.81 * (1 - oil / water) * (d / 2) ** 2 / (9 * nu)
    assert float(weathering.rise_velocity(d, oil, water, nu)) == pytest.approx(stokes, rel=1e-9)
    large = np.sqrt(16 * 9.81 * (1 - oil / water) / 3 * 1e-3)
    assert float(weathering.rise_velocity(2e-3, oil, water, nu)) == pytest.approx(large, rel=1e-9)


def test_biodegradation_by_half_life_and_by_adcrofts_decay():
    assert float(weathering.biodegraded_fraction(283.15, 5 * 86400.0, 5 * 86400.0)) == pytest.approx(0.5)
    tau = 12 * 86400.0  # at 20 °C
    assert float(weathering.biodegraded_fraction(293.15, 86400.0)) == pytest.approx(1 - np.exp(-86400.0 / tau))


# runs


def oil_run(model, n=200, hours=6.0, dt=600.0, spill_options=None, **track):
    spill = fk.oil.spill(model.oil, [*SITE, 0.0], n, volume=0.5, **(spill_options or {}))
    track.setdefault("statistics", [fk.statistics.OilBudget()])
    return fk.track(
        still_sea(), spill.seeds, 0.0, hours * 3600, dt, track.pop("integrator", fk.EulerMaruyama(Vertical(0.02))),
        particles=model, particle_state=spill.particle_state, t_release=spill.t_release, key=jax.random.key(3),
        save_every=track.pop("save_every", 6), dtype=track.pop("dtype", "float64"), **track,
    )  # fmt: skip


def test_the_budget_sums_to_the_released_mass_at_every_frame_with_every_process(aasgard):
    """All processes on, biodegradation too, the spill released over 3 h: each frame's terms sum
    to the oil released by then (to round-off), which grows with the releases; each term is
    what the stored frames give."""
    model = Oil(aasgard, temperature=12.0, biodegradation=True, half_life=2 * 86400.0)
    traj = oil_run(model, spill_options={"duration": 3 * 3600.0})
    budget = traj.statistics["oil_budget"]
    terms = sum(budget[t] for t in fk.statistics.oil_budget.TERMS)
    np.testing.assert_allclose(terms, budget["released"], rtol=1e-12)
    density = float(aasgard.density(288.15))
    released = 0.5 * density * np.minimum(np.floor(traj.times / 3 / 3600 * 200 + 1e-9) + 1, 200) / 200
    released[0] = 0.5 * density / 200  # the first element is out at t = 0
    np.testing.assert_allclose(budget["released"], released, rtol=1e-9)
    assert float(budget["evaporated"][-1]) > 0.2 * released[-1]
    assert all(float(budget[t][-1]) > 0 for t in ("dispersed", "biodegraded", "surface"))
    out = traj.status != fk.Status.NOT_RELEASED
    frames = (traj.variables["evaporated"] * out).sum(axis=1)
    np.testing.assert_allclose(budget["evaporated"], frames, rtol=1e-12)
    mass = traj.variables["components"].sum(-1)
    surface = (traj.status == fk.Status.ACTIVE) & (traj.variables["submerged"] < 0.5)
    np.testing.assert_allclose(budget["surface"], (mass * surface).sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("off", ["evaporation", "emulsification", "dispersion"])
def test_a_process_switched_off_does_nothing(aasgard, off):
    traj = oil_run(Oil(aasgard, **{off: False}), n=50, hours=3.0)
    term = {"evaporation": "evaporated", "dispersion": "dispersed"}.get(off)
    if term:
        assert float(traj.statistics["oil_budget"][term][-1]) == 0.0
    else:
        assert float(np.max(traj.variables["water_fraction"])) == 0.0


def test_the_slick_drifts_at_its_share_of_the_wind(aasgard):
    """No current, no entrainment: every element moves 3 % of the 8 m/s east wind, exactly."""
    traj = oil_run(Oil(aasgard, entrainment=False), n=20, hours=6.0, integrator=fk.RK4())
    east = np.deg2rad(traj.positions[-1, :, 0] - SITE[0]) * fk.fields.grid.EARTH_RADIUS * np.cos(np.deg2rad(SITE[1]))
    np.testing.assert_allclose(east, 0.03 * 8.0 * 6 * 3600, rtol=1e-6)
    np.testing.assert_allclose(traj.positions[-1, :, 2], 0.0)


def test_entrained_droplets_go_down_to_the_waves_depth_and_come_back(aasgard):
    """A 12 m/s wind (Hs 3.5 m) entrains elements of the slick to at most 1.5 Hs; with no mixing
    they rise back at their droplets' terminal velocity and join the slick again."""
    traj = oil_run(Oil(aasgard, dispersion=False), n=300, hours=6.0, dt=60.0, save_every=1,
                   integrator=fk.Euler(), statistics=[])  # fmt: skip
    depth, under = traj.positions[..., 2], traj.variables["submerged"] > 0.5
    assert under.any() and np.all(depth[~under] == 0.0)
    assert depth.max() <= 1.5 * float(weathering.wave_height_from_wind(8.0)) + 1e-9
    went = np.argmax(under, axis=0)
    came_back = [(~under[k + 1 :, i]).any() for i, k in enumerate(went) if under[:, i].any() and k + 1 < len(under)]
    assert np.mean(came_back) > 0.9
    assert np.all(traj.variables["diameter"][under] >= weathering.SPECTRUM_BOUNDS[0])


def test_float32_budget_agrees_with_float64(aasgard):
    model = Oil(aasgard, entrainment=False)
    b64 = oil_run(model, n=40, hours=6.0, integrator=fk.RK4()).statistics["oil_budget"]
    b32 = oil_run(model, n=40, hours=6.0, integrator=fk.RK4(), dtype="float32").statistics["oil_budget"]
    for term in ("surface", "evaporated", "dispersed"):
        np.testing.assert_allclose(b32[term], b64[term], rtol=2e-4, atol=1e-3 * float(b64["released"][-1]))


def test_the_gradient_of_the_evaporated_mass_matches_finite_differences(aasgard):
    """d(evaporated)/d(film thickness) through the whole run, by `jax.grad`, against central
    differences (the release point's gradient: the inverse test below)."""
    field = still_sea()
    seeds = jnp.asarray([[*SITE, 0.0], [SITE[0] + 0.2, SITE[1] - 0.1, 0.0]])

    def loss(thickness):
        model = Oil(aasgard, film_thickness=thickness, entrainment=False)
        traj = fk.track(field, seeds, 0.0, 3 * 3600.0, 900.0, particles=model, dtype="float64", save_every="3h")
        return traj.variables["evaporated"][-1].sum()

    eps = 1e-7
    fd = (loss(1e-3 + eps) - loss(1e-3 - eps)) / (2 * eps)
    assert float(jax.grad(loss)(1e-3)) == pytest.approx(float(fd), rel=1e-5)
    assert float(fd) < 0  # a thicker film has less surface to evaporate from


def test_spills_share_their_oil_among_the_elements(aasgard):
    by_volume = fk.oil.spill(aasgard, [*SITE, 0.0], 10, volume=2.0)
    np.testing.assert_allclose(by_volume.particle_state["components"].sum(), 2.0 * float(aasgard.density(288.15)))
    line_end = [SITE[0] + 1, SITE[1], 0]
    by_rate = fk.oil.spill(aasgard, [*SITE, 0.0], 8, rate=0.5, duration=3600.0, start=600.0, to=line_end)
    np.testing.assert_allclose(by_rate.particle_state["components"].sum(), 1800.0)
    np.testing.assert_allclose(by_rate.t_release, 600.0 + 450.0 * np.arange(8))
    assert np.all(np.diff(by_rate.seeds[:, 0]) > 0)
    with pytest.raises(ValueError, match="one of mass= .*volume= .*rate="):
        fk.oil.spill(aasgard, [*SITE, 0.0], 10, mass=1.0, volume=1.0)


def test_a_budget_needs_oil_and_the_models_options_are_checked(aasgard):
    with pytest.raises(ValueError, match="OilBudget: the run's particles carry no oil"):
        fk.track(still_sea(), np.array([[*SITE, 0.0]]), 0.0, 600.0, 300.0, statistics=[fk.statistics.OilBudget()])
    with pytest.raises(ValueError, match="Oil: spectrum='x'"):
        Oil(aasgard, spectrum="x")
    with pytest.raises(ValueError, match="Oil: convention='gnome'"):
        Oil(aasgard, convention="gnome")


def coast(wind: float, currents=(0.0, 0.0)) -> fk.fields.LayeredField:
    """Open water from 3° E to a coast at 6° E (its nodes land), 59-61° N, 50 m deep, a steady
    east wind, and currents at the west and east nodes (m/s, east)."""
    lon, lat = np.meshgrid([3.0, 4.0, 5.0, 6.0], [59.0, 61.0])
    points = np.column_stack([lon.ravel(), lat.ravel()])
    cells = [[i, i + 1, i + 5, i + 4] for i in range(3)]
    depths = np.broadcast_to(np.linspace(0, 50.0, 6), (1, 8, 6))
    velocity = np.zeros((1, 8, 6, 3))
    velocity[0, :, :, 1] = np.interp(points[:, 0], [3.0, 6.0], currents)[:, None]  # northward, growing east
    return fk.fields.LayeredField.from_arrays(
        points, cells, depths, velocity, np.full((1, 8), 50.0), spherical=True, land=points[:, 0] >= 6.0,
        samples={"wind": fk.fields.Uniform([wind, 0.0])},
    )  # fmt: skip


def test_oil_blown_ashore_strands_with_its_mass_and_weathers_no_more(aasgard):
    spill = fk.oil.spill(aasgard, [5.0, 60.0, 0.0], 30, mass=300.0, radius=2000.0, spherical=True)
    traj = fk.track(
        coast(20.0), spill.seeds, 0.0, 24 * 3600.0, 600.0, particles=Oil(aasgard, entrainment=False),
        particle_state=spill.particle_state, save_every=6, dtype="float64", statistics=[fk.statistics.OilBudget()],
    )  # fmt: skip
    budget = traj.statistics["oil_budget"]
    np.testing.assert_allclose(sum(budget[t] for t in fk.statistics.oil_budget.TERMS), 300.0, rtol=1e-12)
    ashore = traj.status[-1] == fk.Status.BEACHED
    assert ashore.all() and float(budget["stranded"][-1]) > 0.2 * 300.0
    stranded_at = np.argmax(traj.status == fk.Status.BEACHED, axis=0)
    i = int(np.argmin(stranded_at))  # the first ashore keeps the oil it landed with
    after = traj.variables["components"][stranded_at[i] :, i]
    np.testing.assert_array_equal(after, np.broadcast_to(after[-1], after.shape))


def test_gradient_descent_recovers_a_release_point_from_an_observed_slick(aasgard):
    """The inverse problem no peer solves: a slick observed after 12 h (its elements' places),
    released from a point unknown; the release point by gradient descent on the mean squared
    distance from the simulated elements to the observed ones, through the whole run, from a
    guess 20 km off: found to within a hundredth of the 1° cells."""
    field, offsets = coast(8.0, currents=(0.05, 0.4)), np.linspace(-0.05, 0.05, 9)
    cloud = np.column_stack([offsets, np.zeros(9), np.zeros(9)])
    model = Oil(aasgard, entrainment=False)

    def slick(release):
        traj = fk.track(field, release + cloud, 0.0, 43200.0, 1800.0, particles=model, dtype="float64", save_every=24)
        return traj.positions[-1, :, :2]

    truth = jnp.asarray([4.2, 59.8, 0.0])
    observed = slick(truth)
    loss = lambda r: jnp.mean(jnp.sum((slick(r) - observed) ** 2, axis=1))  # noqa: E731
    guess = truth + jnp.asarray([0.3, 0.15, 0.0])
    for _ in range(3):  # the slick moves nearly with its release: steps of 1/2 the gradient are Newton's
        guess = guess - 0.5 * jax.grad(loss)(guess).at[2].set(0.0)
    assert float(jnp.max(jnp.abs(guess - truth)[:2])) < 0.01
    assert float(loss(guess)) < 1e-3 * float(loss(truth + jnp.asarray([0.3, 0.15, 0.0])))


def test_the_processes_constants_and_wind_made_waves_are_logged_before_the_run(aasgard, caplog):
    with caplog.at_level(logging.INFO, logger="flowkit"):
        Oil(aasgard, dispersion=False, temperature="temp").dated(None)
    said = caplog.text
    assert "processes on: evaporation, emulsification, entrainment; off: dispersion, biodegradation" in said
    assert "water salinity a constant 34" in said and "water temperature" not in said
    assert "wave height from the wind" in said
