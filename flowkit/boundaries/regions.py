"""Flat pieces of a domain's boundary (inlets, outlets, open faces) and the surfaces released from.

A `Plane` is given by a point and the normal pointing out of the domain, optionally limited to a
box `region`; a named side (`"xmin"`, `"ymax"`, ...) is the plane of that face of the field's box.
`InletSurface` covers a plane's part of the domain with simplices (triangles in 3-D, segments in
2-D): the mesh's own boundary faces for a `MeshField`, a regular triangulation of the box face
otherwise. Positions are drawn on it exactly uniformly (`random`) or in proportion to the
normal velocity (`flux`, exact for velocities linear on each simplex).
"""

from collections.abc import Mapping
from typing import cast

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import Args, BoundsLike, Param, Positions, ScalarLike, TimeLike
from ..fields.base import AbstractField, Hints
from ..fields.mesh import AbstractMeshField, MeshField

SIDES = {f"{axis}{end}": (i, sign) for i, axis in enumerate("xyz") for end, sign in (("min", -1.0), ("max", 1.0))}


class Plane(eqx.Module):
    """Points `p` with `(p - point) · normal = 0`, within the box `(lo, hi)`; `normal` points out
    of the domain (for an inlet too: particles enter against it)."""

    point: Float[Array, " dim"]
    normal: Float[Array, " dim"]
    lo: Float[Array, " dim"]
    hi: Float[Array, " dim"]

    def __init__(self, point: Param, normal: Param, lo: Param | None = None, hi: Param | None = None):
        point = np.asarray(point, np.float64)
        normal = np.asarray(normal, np.float64)
        if point.ndim != 1 or point.shape != normal.shape or point.shape[0] not in (2, 3):
            raise ValueError(
                f"Plane: point and normal need 2 or 3 coordinates each, got {point.shape} and {normal.shape}"
            )
        length = np.linalg.norm(normal)
        if not np.isfinite(length) or length == 0:
            raise ValueError(f"Plane: normal must be a non-zero vector, got {normal.tolist()}")
        self.point = jnp.asarray(point)
        self.normal = jnp.asarray(normal / length)
        self.lo = jnp.asarray(np.full_like(point, -np.inf) if lo is None else np.asarray(lo, np.float64))
        self.hi = jnp.asarray(np.full_like(point, np.inf) if hi is None else np.asarray(hi, np.float64))

    def distance(self, x: Float[Array, "*batch dim"]) -> Float[Array, "*batch"]:
        """Signed distance of `x` (`(..., dim)`) from the plane, positive outside the domain."""
        return jnp.sum((x - self.point) * self.normal, axis=-1)

    def crossed(self, x_prev: Positions, x_next: Positions, tolerance: ScalarLike) -> Bool[Array, " n"]:
        """Whether each step `x_prev -> x_next` went out through this plane within its region."""
        d0, d1 = self.distance(x_prev), self.distance(x_next)
        s = jnp.clip(d0 / jnp.where(d0 == d1, 1, d0 - d1), 0, 1)[..., None]
        hit = x_prev + s * (x_next - x_prev)
        within = jnp.all((hit >= self.lo - tolerance) & (hit <= self.hi + tolerance), axis=-1)
        return (d1 > 0) & (d0 <= tolerance) & within

    def holds(self, centre: Positions, normal: Positions, tolerance: ScalarLike) -> Bool[Array, " n"]:
        """Whether faces with these centres and outward normals lie on this plane (within region)."""
        on = jnp.abs(self.distance(centre)) <= tolerance
        aligned = jnp.sum(normal * self.normal, axis=-1) > 0.99
        within = jnp.all((centre >= self.lo - tolerance) & (centre <= self.hi + tolerance), axis=-1)
        return on & aligned & within


PlaneSpec = str | Plane | Mapping
"""A plane as a user names it: a side (`"xmin"`), a region (`"patch:inlet"`), a `Plane`, or
`{point, normal[, lo, hi]}`."""


def region(spec: PlaneSpec, field: AbstractField) -> Plane:
    """`plane(spec, ...)` on `field`: its box's sides and its named regions (`"patch:inlet"`)."""
    return plane(
        spec, field.bounds, cast(MeshField, field.as_mesh()).regions if isinstance(field, AbstractMeshField) else None
    )


def plane(spec: PlaneSpec, bounds: BoundsLike, regions: dict | None = None) -> Plane:
    """A `Plane` from a side name (`"xmin"`, ...: a face of `bounds`), a named region of the
    field (`"patch:inlet"`, from `regions`), a `Plane`, or a mapping `{point, normal[, lo, hi]}`
    (from a config)."""
    if isinstance(spec, Plane):
        return spec
    if isinstance(spec, str) and spec.startswith("patch:"):
        if spec not in (regions or {}):
            known = sorted(regions or {})
            raise ValueError(
                f"unknown region {spec!r}: "
                + (
                    f"this field's patches are {known}"
                    if known
                    else "this field has no named patches (a solver's case read by fk.io.read has them)"
                )
            )
        if "point" not in regions[spec]:
            planar = sorted(name for name, value in regions.items() if "point" in value)
            raise ValueError(
                f"region {spec!r} is a curved patch: inlets, outlets and open regions are planes (this "
                f"field's planar patches are {planar}; or give {{point, normal[, lo, hi]}})"
            )
        spec = regions[spec]
    lo, hi = (np.asarray(b, np.float64) for b in bounds)
    dim = lo.shape[0]
    if isinstance(spec, str):
        if spec not in SIDES or SIDES[spec][0] >= dim:
            names = [name for name, (axis, _) in SIDES.items() if axis < dim]
            raise ValueError(
                f"unknown side {spec!r}: a {dim}-D field's sides are {names} (or give {{point, normal[, lo, hi]}})"
            )
        axis, sign = SIDES[spec]
        point = (lo + hi) / 2
        point[axis] = hi[axis] if sign > 0 else lo[axis]
        normal = np.zeros(dim)
        normal[axis] = sign
        region_lo, region_hi = lo.copy(), hi.copy()
        region_lo[axis] = region_hi[axis] = point[axis]
        return Plane(point, normal, region_lo, region_hi)
    try:
        return Plane(spec["point"], spec["normal"], spec.get("lo"), spec.get("hi"))
    except (TypeError, KeyError):
        raise ValueError(
            f"a region must be a side name like 'xmin', a Plane, or {{point, normal[, lo, hi]}}; got {spec!r}"
        ) from None


class InletSurface(eqx.Module):
    """The simplices covering an inlet: `vertices (V, dim)`, `simplices (S, dim)` vertex ids,
    their `measure` (area or length), the mesh `cell` each lies on (-1 for fields without
    cells), each vertex's `vertex_cell`, and the unit `inward` normal."""

    vertices: Float[Array, "V dim"]
    simplices: Int[Array, "S dim"]
    measure: Float[Array, " S"]
    cell: Int[Array, " S"]
    vertex_cell: Int[Array, " V"]
    inward: Float[Array, " dim"]

    def normal_speed(self, field: AbstractField, args: Args, t: TimeLike):
        """`(V,)` inflow speed `max(u · inward, 0)` at the vertices at time `t`."""
        width = field.hints(1, self.vertices.dtype).point.shape[1]  # the field's own hint width
        hint = Hints.of_cells(self.vertex_cell, width, self.vertices.dtype)
        u, _ = field.velocity_batch(t, self.vertices, args, hint)
        return jnp.maximum(jnp.sum(u * self.inward, axis=1), 0)

    def draw(
        self, uniforms: Float[Array, "n w"], inflow: Float[Array, " nodes"] | None = None
    ) -> tuple[Positions, Int[Array, " n"]]:
        """Positions and hints from `uniforms (n, dim + 3)` in `[0, 1)`: uniform over the surface,
        or with `inflow` (per-vertex speeds) in proportion to the flux through it."""
        dim = self.vertices.shape[1]
        corner_speed = None if inflow is None else inflow[self.simplices]  # (S, dim)
        weights = self.measure if inflow is None else self.measure * jnp.mean(corner_speed, axis=1)
        if inflow is not None:  # no inflow anywhere: fall back to uniform
            weights = jnp.where(jnp.sum(weights) > 0, weights, self.measure)
        cdf = jnp.cumsum(weights)
        pick = jnp.clip(jnp.searchsorted(cdf, uniforms[:, 0] * cdf[-1], side="right"), 0, cdf.shape[0] - 1)
        exponentials = -jnp.log1p(-uniforms[:, 2 : 2 + dim])  # Dirichlet(1, ..., 1): uniform in the simplex
        if inflow is not None:
            # A density linear on the simplex is a mixture of the densities proportional to each
            # barycentric coordinate (weight: that corner's speed), and the density proportional
            # to coordinate j is Dirichlet(1 + e_j): one more exponential on corner j.
            speed = corner_speed[pick]
            cumulative = jnp.cumsum(speed, axis=1)
            corner = jnp.sum(cumulative < (uniforms[:, 1] * cumulative[:, -1])[:, None], axis=1)
            bump = jnp.where(cumulative[:, -1:] > 0, jax.nn.one_hot(corner, dim, dtype=uniforms.dtype), 0)
            exponentials = exponentials - bump * jnp.log1p(-uniforms[:, 2 + dim : 3 + dim])
        weights_in = exponentials / jnp.sum(exponentials, axis=1, keepdims=True)
        corners = self.vertices[self.simplices[pick]]  # (n, dim, dim)
        return jnp.einsum("nk,nkd->nd", weights_in, corners), self.cell[pick]


def inlet_surface(field: AbstractField, where: Plane, resolution: int = 32, name: str = "inlet") -> InletSurface:
    """Cover `where` inside `field`'s domain with simplices (host side, once)."""
    if isinstance(field, AbstractMeshField):
        return _mesh_surface(field.as_mesh(), where, name)
    return _box_surface(field, where, resolution, name)


def plane_tolerance(bounds: BoundsLike, dtype: DTypeLike) -> Float[Array, ""]:
    """How far from a plane a point may lie and still count as on it: 1e-6 of the domain's size."""
    return (1e-6 * jnp.max(bounds[1] - bounds[0])).astype(dtype)


def _mesh_surface(mesh, where: Plane, name: str) -> InletSurface:
    cell, face, nodes = mesh.boundary_faces()
    points = np.asarray(mesh.points, np.float64)
    centre, normal = eqx.filter_jit(mesh.face_planes)(jnp.asarray(cell, jnp.int32), jnp.asarray(face, jnp.int32))
    keep = np.asarray(where.holds(centre, normal, plane_tolerance(mesh.bounds, centre.dtype)))
    if not keep.any():
        lo, hi = (np.asarray(b).tolist() for b in mesh.bounds)
        raise ValueError(
            f"{name}: no boundary face of the mesh lies on the plane through "
            f"{np.asarray(where.point).tolist()} with normal {np.asarray(where.normal).tolist()} "
            f"(mesh bounds {lo} to {hi})"
        )
    cell, nodes = cell[keep], nodes[keep]
    if mesh.dim == 2:
        simplices, owner = nodes[:, :2], cell
    else:
        triangle = nodes[:, 2] == nodes[:, 3]
        simplices = np.concatenate([nodes[:, [0, 1, 2]], nodes[~triangle][:, [0, 2, 3]]])
        owner = np.concatenate([cell, cell[~triangle]])
    used, local = np.unique(simplices, return_inverse=True)
    local = local.reshape(simplices.shape)
    vertex_cell = np.zeros(len(used), np.int64)
    vertex_cell[local.ravel()] = np.repeat(owner, simplices.shape[1])
    return _surface(points[used], local, owner, vertex_cell, -np.asarray(where.normal))


def _box_surface(field, where: Plane, resolution: int, name: str) -> InletSurface:
    normal = np.asarray(where.normal)
    axis = int(np.argmax(np.abs(normal)))
    if abs(abs(normal[axis]) - 1) > 1e-9:
        raise ValueError(
            f"{name}: on a field without a mesh the plane must be a face of its box (axis-aligned), "
            f"got normal {normal.tolist()}"
        )
    lo, hi = (np.asarray(b, np.float64) for b in field.bounds)
    a, b = np.maximum(lo, np.asarray(where.lo)), np.minimum(hi, np.asarray(where.hi))
    level = float(np.asarray(where.point)[axis])
    others = [i for i in range(field.dim) if i != axis]
    if np.any(a[others] >= b[others]) or not lo[axis] - 1e-9 <= level <= hi[axis] + 1e-9:
        raise ValueError(
            f"{name}: the plane {axis}={level} with region {a.tolist()}..{b.tolist()} does not meet "
            f"the field's box {lo.tolist()}..{hi.tolist()}"
        )
    ticks = [np.linspace(a[i], b[i], resolution + 1) for i in others]
    grid = np.stack(np.meshgrid(*ticks, indexing="ij"), axis=-1).reshape(-1, len(others))
    vertices = np.zeros((len(grid), field.dim))
    vertices[:, others] = grid
    vertices[:, axis] = level
    m = resolution + 1
    if field.dim == 2:
        simplices = np.stack([np.arange(resolution), np.arange(1, m)], axis=1)
    else:
        i, j = (g.ravel() for g in np.meshgrid(np.arange(resolution), np.arange(resolution), indexing="ij"))
        c00, c10, c01, c11 = i * m + j, (i + 1) * m + j, i * m + j + 1, (i + 1) * m + j + 1
        simplices = np.concatenate([np.stack([c00, c10, c11], 1), np.stack([c00, c11, c01], 1)])
    return _surface(vertices, simplices, np.full(len(simplices), -1), np.full(len(vertices), -1), -normal)


def _surface(vertices, simplices, cell, vertex_cell, inward) -> InletSurface:
    corners = vertices[simplices]
    if vertices.shape[1] == 2:
        measure = np.linalg.norm(corners[:, 1] - corners[:, 0], axis=1)
    else:
        measure = 0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]), axis=1)
    return InletSurface(
        jnp.asarray(vertices),
        jnp.asarray(simplices, jnp.int32),
        jnp.asarray(measure),
        jnp.asarray(cell, jnp.int32),
        jnp.asarray(vertex_cell, jnp.int32),
        jnp.asarray(inward),
    )
