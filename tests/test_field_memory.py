"""`jax.vmap(field)`, the one-point field API of the tracking guide over many points, in memory bounded by
the points: no table of the field is copied per point (a `lax.cond` under `vmap` selects over
every array it closes over; a per-point time slices the whole table), whatever the field."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from meshes import mesh, velocity
from test_ocean_grids import _rotated
from test_projected_grids import _arctic_like
from test_vertical_mixing import still_column

import flowkit as fk

N = 100_000
PER_POINT = 2_000  # bytes of scratch a point may take (a copied table took 5 MB on the projected grid)


def _mesh():
    points, cells, types = mesh("mixed", (9, 6, 6))
    values = np.stack([velocity(points) * (1 + k) for k in range(3)])
    return fk.MeshField.from_arrays(points, cells, values, types, times=[0.0, 1.0, 2.0])


def _projected(tmp_path):
    path, _, _ = _arctic_like(tmp_path / "arctic.nc")
    return fk.io.read(path, dtype="float64")


def _curvilinear(tmp_path):
    dataset, _, _ = _rotated(30.0)
    dataset.to_netcdf(tmp_path / "rotated.nc")
    return fk.io.read(tmp_path / "rotated.nc", dtype="float64")


def _points(field, n: int, rng) -> jnp.ndarray:
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    return jnp.asarray(rng.uniform(lo, hi, (n, field.dim)), field.bounds[0].dtype)


def _fields(tmp_path):
    grid = fk.GridField.from_function(
        lambda t, x, args: jnp.stack([x[1], -x[0]]) * t,
        [np.linspace(0, 1, 50), np.linspace(0, 1, 40)],
        times=np.linspace(0, 1, 5),
    )
    return {
        "mesh": _mesh(),
        "projected z-level grid": _projected(tmp_path),
        "rotated curvilinear grid": _curvilinear(tmp_path),
        "layered column": still_column(),
        "grid series": grid,
    }


def test_vmap_of_a_field_takes_memory_in_proportion_to_its_points(tmp_path):
    """Compiled for 10⁵ points at per-point times (the harder case: a time per point must not
    slice a table per point), each field's evaluation needs at most `PER_POINT` bytes of scratch
    per point."""
    rng = np.random.default_rng(0)
    for name, field in _fields(tmp_path).items():
        x = _points(field, N, rng)
        scratch = jax.jit(jax.vmap(field)).lower(jnp.full(N, 0.5, x.dtype), x).compile().memory_analysis()
        assert scratch.temp_size_in_bytes <= PER_POINT * N, (name, scratch.temp_size_in_bytes / N)


def test_vmap_of_a_field_equals_its_located_batch(tmp_path):
    """The one-point path over many points at per-point times gives what a run's batched path
    gives at each time (NaN where the batch finds no cell)."""
    from flowkit.analysis.picture import speeds_at

    rng = np.random.default_rng(1)
    for name, field in _fields(tmp_path).items():
        if name == "layered column":  # still water: nothing to compare
            continue
        x = _points(field, 500, rng)
        when = rng.integers(0, 2, 500)
        ours = np.asarray(_evaluate(field, jnp.asarray(np.array([0.25, 0.75])[when], x.dtype), x))
        for k, t in enumerate((0.25, 0.75)):
            batch = speeds_at(field, t, np.asarray(x), chunk=512)
            np.testing.assert_allclose(ours[when == k], batch[when == k], rtol=1e-5, atol=1e-6, err_msg=name)
        assert np.isfinite(ours).sum() > 100, name


@eqx.filter_jit
def _evaluate(field, t, x):
    return jax.vmap(field)(t, x)
