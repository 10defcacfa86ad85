"""Analytic fields match their formulas; GridField reproduces sampled flows to interpolation order."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import flowkit as fk


def _eval(field, t, points):
    points = jnp.asarray(points)
    return np.asarray(jax.vmap(field, in_axes=(None, 0, None))(jnp.asarray(t, points.dtype), points, None))


def test_analytic_formulas(getkey):
    x = np.asarray(jax.random.uniform(getkey(), (50, 3), minval=0, maxval=2 * math.pi))
    A, B, C = math.sqrt(3), math.sqrt(2), 1.0
    expected = np.stack(
        [
            A * np.sin(x[:, 2]) + C * np.cos(x[:, 1]),
            B * np.sin(x[:, 0]) + A * np.cos(x[:, 2]),
            C * np.sin(x[:, 1]) + B * np.cos(x[:, 0]),
        ],
        -1,
    )
    np.testing.assert_allclose(_eval(fk.fields.ABCFlow(), 0.0, x), expected, rtol=1e-12)

    p, t = x[:, :2] / math.pi, 1.7
    eps, omega, amp = 0.25, 2 * math.pi / 10, 0.1
    a, b = eps * np.sin(omega * t), 1 - 2 * eps * np.sin(omega * t)
    f = a * p[:, 0] ** 2 + b * p[:, 0]
    dg = np.stack(
        [
            -np.pi * amp * np.sin(np.pi * f) * np.cos(np.pi * p[:, 1]),
            np.pi * amp * np.cos(np.pi * f) * np.sin(np.pi * p[:, 1]) * (2 * a * p[:, 0] + b),
        ],
        -1,
    )
    np.testing.assert_allclose(_eval(fk.fields.DoubleGyre(), t, p), dg, rtol=1e-12, atol=1e-15)

    tg = fk.fields.TaylorGreen(U=2.0, k=1.0, nu=0.1)
    decay = np.exp(-2 * 0.1 * t)
    expected = np.stack(
        [2 * np.sin(x[:, 0]) * np.cos(x[:, 1]) * decay, -2 * np.cos(x[:, 0]) * np.sin(x[:, 1]) * decay], -1
    )
    np.testing.assert_allclose(_eval(tg, t, x[:, :2]), expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(_eval(fk.fields.Uniform((1.0, -2.0, 0.5)), t, x), np.tile([1.0, -2.0, 0.5], (50, 1)))


def test_field_works_as_diffrax_term():
    import diffrax

    field = fk.fields.SolidBodyRotation()
    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(field),
        diffrax.Tsit5(),
        0.0,
        math.pi,
        0.01,
        jnp.array([1.0, 0.0]),
        stepsize_controller=diffrax.PIDController(rtol=1e-10, atol=1e-12),
    )
    np.testing.assert_allclose(sol.ys[-1], [-1.0, 0.0], atol=1e-8)


def _linear(t, x, args=None):
    """Velocity linear in every coordinate and in time: multilinear interpolation is exact."""
    m = jnp.arange(1.0, 1.0 + x.shape[0] ** 2).reshape(x.shape[0], x.shape[0]) / 7.0
    return m @ x + 0.3 * t + jnp.arange(x.shape[0]) * 0.1


@pytest.mark.parametrize("dim", [2, 3])
def test_grid_exact_on_linear_data_with_time(dim, getkey):
    axes = [np.linspace(-1, 1, 7), np.geomspace(0.1, 3.0, 9), np.linspace(0, 2, 5)][:dim]  # axis 1 is rectilinear
    times = np.array([0.0, 0.4, 1.5, 2.0])
    grid = fk.GridField.from_function(_linear, axes, times=times, dtype="float64")
    assert grid.uniform == (True, False, True)[:dim]
    lo, hi = (np.asarray(b) for b in grid.bounds)
    points = lo + (hi - lo) * np.asarray(jax.random.uniform(getkey(), (200, dim)))
    for t in (0.0, 0.3, 0.77, 2.0):
        expected = np.asarray(jax.vmap(lambda x: _linear(t, x))(jnp.asarray(points)))
        np.testing.assert_allclose(_eval(grid, t, points), expected, rtol=1e-12, atol=1e-12)


def test_grid_interpolation_is_second_order():
    field = fk.fields.TaylorGreen()
    points = np.random.default_rng(0).uniform(0.2, 6.0, (500, 2))
    exact = _eval(field, 0.0, points)
    errors = []
    for n in (32, 64, 128):
        axes = [np.linspace(0, 2 * np.pi, n, endpoint=False)] * 2
        grid = fk.GridField.from_function(field, axes, periodic=True, dtype="float64")
        errors.append(np.max(np.abs(_eval(grid, 0.0, points) - exact)))
    rates = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    assert np.all(np.abs(rates - 2) < 0.2), rates


def test_periodic_axis_with_its_end_node_repeated_gets_the_right_period(caplog):
    """`np.linspace(0, 2π, 25)` on an axis of period 2π: the end plane repeats the first and is
    dropped (logged), so the field and its trajectories equal those of the 24 distinct nodes.
    Decided from the coordinates: `periodic=True` would mean the 25 nodes span 25 steps, which
    an axis spanning 2π with equal end planes is refused for, naming `periodic=2π`."""
    field = fk.fields.ABCFlow()
    distinct = fk.GridField.from_function(
        field, [np.linspace(0, 2 * np.pi, 24, endpoint=False)] * 3, periodic=True, dtype="float64"
    )
    with caplog.at_level("INFO", logger="flowkit"):
        repeated = fk.GridField.from_function(
            field, [np.linspace(0, 2 * np.pi, 25)] * 3, periodic=2 * np.pi, dtype="float64"
        )
    assert repeated.shape == (24, 24, 24) and caplog.text.count("repeats the first") == 3
    np.testing.assert_allclose(np.asarray(repeated.bounds[1]), [2 * np.pi] * 3)
    seeds = np.random.default_rng(4).uniform(0, 2 * np.pi, (50, 3))
    a = fk.track(distinct, seeds, 0.0, 3.0, 0.01, save_every=100, dtype="float64")
    b = fk.track(repeated, seeds, 0.0, 3.0, 0.01, save_every=100, dtype="float64")
    np.testing.assert_allclose(b.positions, a.positions, atol=1e-12)
    repeated_end = r"periodic axis 0 spans 6.28319 and has the same values on its end node.*give periodic=6.28318"
    with pytest.raises(ValueError, match=repeated_end):
        fk.GridField.from_function(field, [np.linspace(0, 2 * np.pi, 25)] * 3, periodic=True, dtype="float64")
    uniform_in_z = fk.GridField.from_arrays(np.ones((4, 3, 2)), [np.arange(4.0), np.arange(3.0)], periodic=(4.0, False))
    assert uniform_in_z.shape == (4, 3)  # equal end planes, but the stated period says distinct nodes
    with pytest.raises(ValueError, match="periodic axis 0 spans 3 with spacing 1: neither one period of 5"):
        fk.GridField.from_arrays(np.ones((4, 3, 2)), [np.arange(4.0), np.arange(3.0)], periodic=(5.0, False))


def test_grid_periodic_axes_wrap():
    field = fk.fields.ABCFlow()
    axes = [np.linspace(0, 2 * np.pi, 24, endpoint=False)] * 3
    grid = fk.GridField.from_function(field, axes, periodic=True, dtype="float64")
    np.testing.assert_allclose(np.asarray(grid.bounds[1]), [2 * np.pi] * 3)
    points = np.random.default_rng(1).uniform(0, 2 * np.pi, (100, 3))
    base = _eval(grid, 0.0, points)
    for shift in (2 * np.pi, -2 * np.pi, 6 * np.pi):
        np.testing.assert_allclose(_eval(grid, 0.0, points + shift), base, atol=1e-12)
    # between the last node and the first (across the period) the value is interpolated, not clamped
    x_edge = np.array([[2 * np.pi - 0.5 * (2 * np.pi / 24), 1.0, 1.0]])
    lo_node = np.array([[2 * np.pi - 2 * np.pi / 24, 1.0, 1.0]])
    expected = 0.5 * (_eval(grid, 0.0, lo_node) + _eval(grid, 0.0, np.array([[0.0, 1.0, 1.0]])))
    np.testing.assert_allclose(_eval(grid, 0.0, x_edge), expected, atol=1e-12)
    assert bool(jax.vmap(grid.in_domain)(jnp.asarray(points + 10.0)).all())


def test_grid_nearest_and_domain():
    axes = [np.linspace(0, 1, 3), np.linspace(0, 1, 3)]
    data = np.zeros((3, 3, 2))
    data[..., 0] = np.arange(9).reshape(3, 3)
    grid = fk.GridField.from_arrays(data, axes, interpolation="nearest", dtype="float64")
    np.testing.assert_allclose(_eval(grid, 0.0, [[0.2, 0.3], [0.3, 0.9], [0.9, 0.1]])[:, 0], [1.0, 5.0, 6.0])
    inside = np.asarray(jax.vmap(grid.in_domain)(jnp.array([[0.0, 1.0], [0.5, 0.5], [1.0001, 0.5], [0.5, -0.01]])))
    np.testing.assert_array_equal(inside, [True, True, False, False])


def test_grid_keeps_only_jax_arrays():
    grid = fk.datasets.double_gyre_grid(nx=21, ny=11, nt=5)
    leaves = jax.tree.leaves(grid)
    assert leaves and all(isinstance(leaf, jax.Array) for leaf in leaves)
    assert grid.values.dtype == jnp.float32 and grid.time_range == (0.0, 20.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            dict(data=np.zeros((4, 3, 2)), axes=[np.array([0, 1, 0.5, 2]), np.arange(3.0)]),
            "axes\\[0\\] must be strictly increasing",
        ),
        (
            dict(data=np.zeros((4, 3, 2)), axes=[np.arange(4.0), np.arange(4.0)]),
            "steady data must have shape \\(4, 4, 2\\)",
        ),
        (
            dict(data=np.zeros((2, 4, 3, 2)), axes=[np.arange(4.0), np.arange(3.0)], times=[1.0, 0.0]),
            "times must be a strictly increasing",
        ),
        (
            dict(data=np.zeros((3, 4, 3, 2)), axes=[np.arange(4.0), np.arange(3.0)], times=[0.0, 1.0]),
            "time-series data must have shape \\(2, 4, 3, 2\\)",
        ),
        (
            dict(data=np.zeros((4, 3, 2)), axes=[np.arange(4.0), np.array([0, 1, 3.0])], periodic=True),
            "periodic axis 1 must be uniformly spaced",
        ),
        (
            dict(data=np.zeros((4, 3, 2)), axes=[np.arange(4.0), np.arange(3.0)], interpolation="cubic"),
            "interpolation must be one of",
        ),
    ],
)
def test_grid_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        fk.GridField.from_arrays(**kwargs)


def test_npz_round_trip(tmp_path):
    grid = fk.datasets.double_gyre_grid(nx=21, ny=11, nt=4)
    path = fk.io.save_grid_npz(tmp_path / "dg.npz", grid)
    again = fk.io.load_grid_npz(path)
    np.testing.assert_array_equal(np.asarray(again.values), np.asarray(grid.values))
    np.testing.assert_array_equal(np.asarray(again.times), np.asarray(grid.times))
    np.savez(tmp_path / "bad.npz", velocity=np.zeros((3, 3, 2)), x=np.arange(3.0))
    with pytest.raises(ValueError, match="bad.npz.*missing \\['y'\\]"):
        fk.io.load_grid_npz(tmp_path / "bad.npz")


def test_periodic_true_on_an_axis_whose_end_node_repeats_the_first_names_the_period():
    """A round span alone (`linspace(0, 360, 37)`) or equal end planes alone (a period of 7.3
    sampled with its end node) are refused; data constant along the axis (Parcels' zonal flow)
    and distinct nodes spanning a round period are not."""
    lat = np.array([-1.0, 0.0, 1.0])
    lon = np.linspace(0.0, 360.0, 37)
    noise = np.random.default_rng(0).normal(size=(37, 3, 2))
    with pytest.raises(ValueError, match=r"axis 0 spans 360, so its end node.*give periodic=360.0 "):
        fk.GridField.from_arrays(noise, [lon, lat], periodic=(True, False))
    x = np.linspace(0.0, 7.3, 30)
    wave = np.zeros((30, 3, 2))
    wave[..., 0] = np.sin(2 * np.pi * x / 7.3)[:, None]
    with pytest.raises(ValueError, match=r"axis 0 has the same values on its end node as on its first.*periodic=7.3 "):
        fk.GridField.from_arrays(wave, [x, lat], periodic=(True, False))
    wave[..., 0] = 0.1
    assert fk.GridField.from_arrays(wave, [x, lat], periodic=(True, False)).shape == (30, 3)
    distinct = np.linspace(0.0, 360.0, 36, endpoint=False)
    assert fk.GridField.from_arrays(noise[:36], [distinct, lat], periodic=(True, False)).shape == (36, 3)
    assert fk.GridField.from_arrays(noise, [lon, lat], periodic=(360.0, False)).shape == (36, 3)


@pytest.mark.parametrize(
    "make",
    [
        lambda: fk.GridField(np.zeros((4, 5, 2)), [np.arange(4.0), np.arange(5.0)]),
        lambda: fk.GridField(np.zeros((4, 5, 2)), [np.arange(4.0), np.arange(5.0)], dtype="float32"),
        lambda: fk.MeshField(np.zeros((4, 3)), np.zeros((1, 4), int), np.zeros((4, 3))),
        lambda: fk.fields.LayeredField(np.zeros((4, 2))),
        lambda: fk.fields.CurvilinearField(np.zeros((4, 5, 2)), [np.arange(4.0), np.arange(5.0)]),
    ],
)
def test_an_old_constructor_call_is_refused_naming_from_arrays(make):
    with pytest.raises(TypeError, match=r"is made from data by \w+Field\.from_arrays"):
        make()


def test_each_field_names_the_kernel_that_evaluates_it():
    from flowkit.tracker.kernels import KERNELS

    named = {
        fk.GridField: "grid",
        fk.MeshField: "mesh",
        fk.fields.LayeredField: "ocean",
        fk.fields.CurvilinearField: None,
        fk.fields.DoubleGyre: None,
        fk.fields.Uniform: None,
    }
    for cls, kernel in named.items():
        assert cls.kernel == kernel
        assert kernel is None or kernel in KERNELS
