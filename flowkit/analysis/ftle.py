"""Finite-time Lyapunov exponents from exact flow-map Jacobians.

The flow map $\\phi(x_0) = x(t_0 + T)$ is differentiated through the integrator with forward-mode
autodiff (one tangent per axis, all particles at once), so the Cauchy–Green tensor
$C = \\nabla\\phi^\\top \\nabla\\phi$ needs no finite-difference stencil: it works at scattered
points, on any grid, in 2-D and 3-D, forward ($T > 0$, repelling structures) and backward
($T < 0$, attracting). The finite-difference variant is kept for comparison.
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jax.typing import DTypeLike

from .._custom_types import Args
from .._status import Status
from ..boundaries.base import AbstractBoundary
from ..fields.base import AbstractField
from ..fields.streamed import StreamedField
from ..integrators.base import AbstractIntegrator
from ..integrators.runge_kutta import RK4
from ..tracker import track


def _final(field, x0, t0, T, dt, integrator, boundary, args, dtype):
    step = abs(dt) if T > 0 else -abs(dt)
    traj = track(field, x0, t0, t0 + T, step, integrator, boundary, save_every=10**9, args=args, dtype=dtype)
    return traj.positions[-1], traj.status[-1]


_BLOCK = 4096
"""Points per block: each block's primal and tangents stay in cache through all steps."""


@eqx.filter_jit
def _autodiff_jacobian(field, points, t0, T, dt, integrator, boundary, args, dtype, mesh, blocks):
    """Final positions, statuses and Jacobians of every point, blockwise, sharded over `mesh`."""
    dim = points.shape[1]
    dynamic, static = eqx.partition((field, integrator, boundary, args), eqx.is_array)

    def block(dynamic, x):
        # Traced seeds make `track` one pure program; `vmap` over the axis tangents shares the primal.
        field, integrator, boundary, args = eqx.combine(dynamic, static)
        flow = lambda y: _final(field, y, t0, T, dt, integrator, boundary, args, dtype)  # noqa: E731
        tangents = jnp.broadcast_to(jnp.eye(dim, dtype=x.dtype)[:, None, :], (dim,) + x.shape)
        (final, status), columns = jax.vmap(lambda v: jax.jvp(flow, (x,), (v,)), out_axes=(None, 0))(tangents)
        return final, status, jnp.moveaxis(columns[0], 0, -1)

    def local(dynamic, x):
        final, status, jac = jax.lax.map(lambda b: block(dynamic, b), x.reshape(blocks, -1, dim))
        return final.reshape(-1, dim), status.reshape(-1), jac.reshape(-1, dim, dim)

    if mesh is None:
        return local(dynamic, points)
    p = PartitionSpec("points")
    return jax.shard_map(local, mesh=mesh, in_specs=(PartitionSpec(), p), out_specs=(p, p, p), check_vma=False)(
        dynamic, points
    )


def _padded(points, devices):
    """Pad the point count to whole blocks on every device (repeating the first point); blocks per device."""
    per_device = -(-len(points) // len(devices))
    blocks = -(-per_device // _BLOCK)
    block = -(-per_device // blocks)
    total = len(devices) * blocks * block
    return np.concatenate([points, np.repeat(points[:1], total - len(points), axis=0)]), blocks


def flow_map_jacobian(
    field: AbstractField | StreamedField,
    points,
    t0: float,
    T: float,
    dt: float,
    integrator: AbstractIntegrator | None = None,
    boundary: AbstractBoundary | None = None,
    *,
    method: str = "autodiff",
    delta: float | None = None,
    args: Args = None,
    dtype: DTypeLike = "float64",
):
    """Final positions, final statuses and flow-map Jacobians `J[n, i, j] = ∂φ_i/∂x_j`.

    **Arguments:** as `ftle`.

    **Returns:** `(final (N, d), status (N,), J (N, d, d))` as NumPy arrays.
    """
    integrator = RK4() if integrator is None else integrator
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != field.dim:
        raise ValueError(f"points must have shape (N, {field.dim}), got {points.shape}")
    if T == 0:
        raise ValueError("T (the integration time) must be non-zero; negative T integrates backward")
    if method == "autodiff":
        from .._dtypes import resolve
        from ..fields.streamed import refuse_streamed

        refuse_streamed(
            field, "method='autodiff'", "use method='fd' (tracked window by window) or read it with stream=False"
        )

        devices = jax.local_devices()
        mesh = Mesh(np.array(devices), ("points",)) if len(devices) > 1 else None
        padded, blocks = _padded(points, devices)
        x = jnp.asarray(padded, resolve(dtype))
        if mesh is not None:
            x = jax.device_put(x, NamedSharding(mesh, PartitionSpec("points")))
        final, status, jac = _autodiff_jacobian(
            field, x, float(t0), float(T), float(dt), integrator, boundary, args, dtype, mesh, blocks
        )
        n = len(points)
        return np.asarray(final)[:n], np.asarray(status)[:n], np.asarray(jac)[:n]
    if method != "fd":
        raise ValueError(f"method must be 'autodiff' or 'fd', got {method!r}")
    lo, hi = (np.asarray(b, dtype=np.float64) for b in field.bounds)
    delta = 1e-5 * float(np.max(hi - lo)) if delta is None else float(delta)
    n, dim = points.shape
    offsets = np.concatenate([np.eye(dim), -np.eye(dim)]) * delta  # (2d, d)
    stencil = (points[None] + offsets[:, None]).reshape(-1, dim)
    stencil = np.clip(stencil, lo, hi)  # stencils poking past the bounds are evaluated on them
    spacing = np.clip(points[None] + offsets[:, None], lo, hi) - points[None]  # (2d, N, d)
    step = abs(dt) if T > 0 else -abs(dt)
    everything = np.concatenate([points, stencil])
    traj = track(field, everything, t0, t0 + T, step, integrator, boundary, save_every=10**9, args=args, dtype=dtype)
    out = traj.positions[-1].astype(np.float64)
    final, moved = out[:n], out[n:].reshape(2 * dim, n, dim)
    width = np.stack([spacing[i, :, i] - spacing[dim + i, :, i] for i in range(dim)], axis=-1)  # (N, d)
    jac = np.stack([(moved[i] - moved[dim + i]) / width[:, i : i + 1] for i in range(dim)], axis=-1)
    status = traj.status[-1, :n]
    stencil_status = traj.status[-1, n:].reshape(2 * dim, n)
    status = np.where(
        (stencil_status != Status.ACTIVE).any(axis=0) & (status == Status.ACTIVE), stencil_status.max(axis=0), status
    )
    return final, status, jac


def cauchy_green(jacobian) -> np.ndarray:
    """Right Cauchy–Green tensors $C = J^\\top J$ for an `(N, d, d)` stack of Jacobians."""
    jacobian = np.asarray(jacobian)
    return np.einsum("nki,nkj->nij", jacobian, jacobian)


def ftle(
    field: AbstractField | StreamedField,
    points,
    t0: float,
    T: float,
    dt: float,
    integrator: AbstractIntegrator | None = None,
    boundary: AbstractBoundary | None = None,
    *,
    method: str = "autodiff",
    delta: float | None = None,
    args: Args = None,
    dtype: DTypeLike = "float64",
) -> np.ndarray:
    """Finite-time Lyapunov exponents $\\frac{1}{|T|}\\log\\sqrt{\\lambda_{max}(C)}$ at `points`.

    **Arguments:**

    - `field`, `points` (`(N, d)`, scattered or a grid from `fk.seeding.uniform_grid`).
    - `t0`, `T`: start time and integration time (negative: backward FTLE, attracting structures).
    - `dt`, `integrator` (default RK4), `boundary` (default none), `args`, `dtype` (float64).
    - `method`: `"autodiff"` (exact Jacobian of the discrete flow map, forward mode) or `"fd"`
      (central differences with spacing `delta`, default 1e-5 of the domain size).

    **Returns:** `(N,)` exponents; NaN where the particle (or, for `"fd"`, a stencil point) did
    not stay active for the whole time (left the field, absorbed, non-finite).
    """
    final, status, jac = flow_map_jacobian(
        field, points, t0, T, dt, integrator, boundary, method=method, delta=delta, args=args, dtype=dtype
    )
    largest = np.linalg.eigvalsh(cauchy_green(jac))[:, -1]
    exponents = np.log(np.sqrt(np.maximum(largest, np.finfo(np.float64).tiny))) / abs(T)
    return np.where(status == Status.ACTIVE, exponents, np.nan)
