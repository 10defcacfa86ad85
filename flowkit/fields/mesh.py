"""Velocity data on an unstructured mesh of linear cells, interpolated exactly as VTK does."""

import dataclasses
from collections.abc import Mapping
from types import ModuleType
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike
from jaxtyping import Array, Bool, Float, Int

from .._custom_types import Args, ArrayInput, Bounds, PointsLike, Position, Positions, TimeLike, TimesLike, Velocity
from . import cells as _cells, forcing, mesh_faces as _faces
from .base import SKIP, TIME_INVARIANT, Hints, built_by, node_rows, one_position, slice_rows, time_slices, time_weights
from .located import AbstractMeshField
from .locator import MeshTopology, device_tables, in_precision, mesh_topology
from .lookup import IndexLookup
from .near_wall import near_wall_velocity
from .sizes import axis_sizes, mesh_max_rate, shortest_edges
from .slices import as_series, sample_series, sampled


@built_by("from_arrays")
class MeshField(AbstractMeshField):
    """Point data on a mesh of linear cells (tetrahedra, hexahedra, wedges, pyramids, voxels;
    triangles, quads, pixels in 2-D), steady or a time series on a fixed mesh.

    Inside a cell the value is the cell's own shape-function interpolation of its node values —
    barycentric for simplices, isoparametric (multi)linear for the others, inverted by Newton
    steps — the interpolation of VTK's `vtkProbeFilter`; in time it is linear between slices.

    **Point location** runs inside the compiled step with fixed shapes. A particle's `Hints`
    (cell, point, parametric coordinates) is checked first, Newton starting from them; then the
    walk crosses the face the point lies beyond, up to `walk_steps` times. Points it does not
    settle are searched, as one compact batch, in a uniform bin grid holding each cell in every
    bin its bounding box overlaps: complete, so a point in no cell of its bin is outside. A
    logically rectangular grid's `lookup` (`fields.lookup`) starts unhinted points at a cell.

    Outside the mesh `in_domain` is false: the tracker marks a particle ending a step there
    `OUT_OF_DOMAIN`. An RK stage point just outside sees the value extrapolated from the
    boundary cell it left through (the mesh analogue of the grid's ghost layer).

    **Made by `from_arrays`, from:**

    - `points`: `(P, dim)` node coordinates (`dim` 2 or 3).
    - `cells`: `(C, k)` node ids per cell in VTK's node order, padded with -1 for mixed meshes.
    - `values`: `(P, dim)` steady or `(T, P, dim)` with `times`: velocity at the nodes; with
      `cell_values=True`, `(C, dim)` or `(T, C, dim)`: one velocity per cell, piecewise constant.
    - `cell_types`: `(C,)` VTK type ids (`vtk.VTK_TETRA`, ...); by default inferred from the
      node count (3-D: 4 tetra, 5 pyramid, 6 wedge, 8 hexahedron; 2-D: 3 triangle, 4 quad).
    - `times`: strictly increasing times of the slices, or None for a steady field.
    - `samples`: arrays to interpolate along tracks, `{name: (P[, c]) or (T, P[, c])}`, or forcing fields.
    - `dtype`: storage precision. `walk_steps`, `newton_steps`, `bin_scale`: locator settings.
    - `topology`: the location structures of these `points` and `cells`, built beforehand by
      `fk.fields.locator.mesh_topology` (a reader builds them while it reads the later files).
    - `regions`: named boundary regions, `{"patch:inlet": {point, normal, lo, hi}}`, that
      boundaries take by name; `fk.io.read` makes them from a solver's patches (None for a
      curved patch, which boundaries refuse by name).
    - `velocity_array`: what the values were read from, for the run's record: an array's name,
      components (`SV_U,SV_V`) or `Momentum/Density`; empty for arrays given directly.
    """

    points: Float[Array, "P dim"]
    nodes: Int[Array, "C k"]
    kind_of_cell: Int[Array, " C"] | None
    affine_map: Float[Array, "C m"]
    neighbours: Int[Array, "C f"]
    bin_origin: Float[Array, " dim"]
    bin_inv_size: Float[Array, " dim"]
    bin_start: Int[Array, " B1"]
    bin_cells: Int[Array, " M"]
    values: Float[Array, "T _rows dim"]  # rows: points, or cells with `cell_values`
    sample_values: Float[Array, "T P s"] | None
    times: Float[Array, " T"] | None
    bounds: Bounds
    dim: int = eqx.field(static=True)
    components: int = eqx.field(static=True)
    kinds: tuple[str, ...] = eqx.field(static=True)
    time_invariant: ClassVar[frozenset[str]] = (
        TIME_INVARIANT
        | {"components", "points", "nodes"}
        | {"n_cells", "kinds", "face_planes", "boundary_faces", "velocity_array"}
    )
    shared_location: ClassVar[bool] = True
    kernel: ClassVar[str | None] = "mesh"
    spherical: ClassVar[bool] = False  # a mesh in plain coordinates (an ocean grid's is `CurvilinearField`)
    time_origin: ClassVar[None] = None
    bin_shape: tuple[int, ...] = eqx.field(static=True)
    sample_layout: tuple[tuple[str, int, bool], ...] = eqx.field(static=True)
    cell_values: bool = eqx.field(static=True)
    walk_steps: int = eqx.field(static=True)
    newton_steps: int = eqx.field(static=True)
    geometry_eps: float = eqx.field(static=True)
    time_range: tuple[float, float] = eqx.field(static=True)
    periodic: tuple[bool, ...] = eqx.field(static=True)
    velocity_array: str = eqx.field(static=True)
    near_wall: tuple[Int[Array, " C"], Float[Array, "W F k"]] | None  # `fields.near_wall`, set by the run's walls
    regions: dict
    forcings: forcing.Forcings | None
    lookup: IndexLookup | None

    @classmethod
    def from_arrays(
        cls,
        points: ArrayInput,
        cells: ArrayInput,
        values: ArrayInput,
        cell_types: ArrayInput | None = None,
        times: TimesLike | None = None,
        *,
        samples: Mapping | None = None,
        dtype: DTypeLike = "float32",
        cell_values: bool = False,
        walk_steps: int = 12,
        newton_steps: int = 6,
        bin_scale: float = 0.75,
        topology: MeshTopology | None = None,
        regions: Mapping | None = None,
        velocity_array: str = "",
    ) -> "MeshField":
        """The field of `values` on the mesh of `points` and `cells`, its locator built, checked
        and stored on the device (the arguments above)."""
        from .._dtypes import resolve

        dtype = resolve(dtype)
        if topology is None:
            topology = mesh_topology(points, cells, cell_types, bin_scale)
        elif (len(points), len(cells)) != (len(topology.points), len(topology.nodes)):
            raise ValueError(
                f"MeshField: topology was built for {len(topology.points)} points and "
                f"{len(topology.nodes)} cells, not these {len(points)} and {len(cells)}"
            )
        topology = in_precision(topology, dtype)  # cells share their nodes exactly in the stored table
        points = topology.points
        dim = points.shape[1]
        values, times, time_range = as_series(values, times, len(cells) if cell_values else len(points), "values")
        if values.shape[-1] != dim:
            raise ValueError(
                f"MeshField: values need {dim} components per point for a {dim}-D mesh, got {values.shape[-1]}"
            )
        samples, forcing_fields = forcing.split(samples)
        sample_layout, table = sample_series(samples, times, len(points))
        field = cls(
            **device_tables(topology, dtype),
            values=jnp.asarray(values, dtype),
            sample_values=None if table is None else jnp.asarray(table, dtype),
            times=None if times is None else jnp.asarray(times, dtype),
            bounds=(jnp.asarray(points.min(axis=0), dtype), jnp.asarray(points.max(axis=0), dtype)),
            dim=dim,
            components=dim,
            sample_layout=sample_layout,
            cell_values=bool(cell_values),
            walk_steps=int(walk_steps),
            newton_steps=int(newton_steps),
            time_range=time_range,
            periodic=(False,) * dim,
            velocity_array=str(velocity_array),
            near_wall=None,
            regions=dict(regions or {}),
            forcings=None,
            lookup=None,
        )
        return dataclasses.replace(
            field, forcings=forcing.made(field, forcing_fields, "MeshField: samples", set(samples))
        )

    def as_mesh(self) -> "MeshField":
        return self

    # -- geometry ---------------------------------------------------------------------------

    @property
    def n_cells(self) -> int:
        return int(self.nodes.shape[0])

    def time_leaves(self) -> dict:
        return {"values": self.values} | ({} if self.sample_values is None else {"sample_values": self.sample_values})

    def value_components(self) -> int:
        return self.components

    def data_batch(self, t: TimeLike, x: Positions, args: Args, hint: Hints) -> tuple[Array, Hints]:
        return self.velocity_batch(t, x, args, hint)

    def beached_batch(self, x: Positions, hint: Hints | None = None) -> None:
        return None  # a mesh's walls hold its particles: no land

    def describe(self) -> str:
        return f"{self.points.shape[0]} points, {self.n_cells} cells ({'/'.join(self.kinds)}){time_slices(self.times)}"

    def containment_tolerance(self) -> float:
        """Containment tolerance in parametric units, from the precision the geometry was given
        in (not the query's): a float32 mesh queried in float64 finds the same cells."""
        return 16 * self.geometry_eps

    def hints(self, n: int, dtype: DTypeLike, xp: ModuleType = jnp) -> Hints:
        return Hints.unknown(n, self.dim, dtype, xp)

    def _coords(self, cell, x, done=None, warm: Hints | None = None):
        """`(xi, violations, converged)` of each row of `x` in `cell` (its own kind's map; an
        unconverged row is not inside, whatever its violations); rows marked `done` skip the
        Newton iterations (their result is not used). Every non-simplex
        kind is iterated as the hexahedron (quad) on its `box_corners`, so the Newton loop of a
        mixed mesh runs one map, not one per kind.

        Newton starts from the cell's linearisation at its centre, or, for rows whose `warm`
        hint located a point in this same cell, from that point's coordinates moved by the
        linearisation: a row at exactly that point starts converged, and does no iteration."""
        faces = self.neighbours.shape[1]
        kind_of_row = None if self.kind_of_cell is None else self.kind_of_cell[cell]
        curved = [k for k, name in enumerate(self.kinds) if not _cells.KINDS[name].simplex]
        newton = None
        maps = self.affine_map[cell]
        if curved:
            kinds = [_cells.KINDS[self.kinds[k]] for k in curved]
            pick = [None if kind_of_row is None else kind_of_row == k for k in curved]
            centre = _cells.chosen([[jnp.asarray(c, x.dtype) for c in kind.centre] for kind in kinds], pick)
            if len(curved) < len(self.kinds):  # rows of simplices take no iterations
                simplex = sum(kind_of_row == k for k in range(len(self.kinds)) if k not in curved) > 0
                done = simplex if done is None else simplex | done
            start = _cells.barycentric(maps, x) + jnp.stack(jnp.broadcast_arrays(*centre), axis=-1)
            if warm is not None:
                near = (warm.cell == cell) & jnp.isfinite(warm.point[:, 0])
                moved = warm.coords + _cells.linear(maps, x - jnp.where(near[:, None], warm.point, x))
                start = jnp.where(near[:, None], moved, start)
            start = jnp.clip(start, -2.0, 3.0)
            frame = maps[:, self.dim * (self.dim + 1) :]  # the box map, one row per cell (locator.affine_maps)
            newton = _cells.newton_coords(_cells.BOX[self.dim], frame, x, self.newton_steps, xi=start, done=done)
        out = None
        for k, name in enumerate(self.kinds):
            kind = _cells.KINDS[name]
            if kind.simplex:
                xi = _cells.barycentric(maps, x)
                v, converged = -_cells.simplex_weights(xi), jnp.ones(x.shape[0], bool)
            else:
                xi, converged = newton
                v = kind.violations(xi)
            v = jnp.pad(v, ((0, 0), (0, faces - v.shape[1])), constant_values=-jnp.inf)
            if out is None:
                out = (xi, v, converged)
            else:
                pick = kind_of_row == k
                out = tuple(
                    jnp.where(pick[:, None] if new.ndim > 1 else pick, new, old)
                    for new, old in zip((xi, v, converged), out)
                )
        return out

    def _weights(self, cell, x, xi):
        """Differentiable node weights of `x` in `cell` at its located coordinates `xi`: the
        barycentrics for simplices, `shape(xi)` for the others, with the inverse map's derivative."""
        width, out, nodes = self.nodes.shape[1], None, None
        for k, name in enumerate(self.kinds):
            kind = _cells.KINDS[name]
            if kind.simplex:
                w = _cells.located_simplex_weights(self.affine_map[cell], x, xi[:, : self.dim])
            else:
                nodes = self.nodes[cell] if nodes is None else nodes
                corners = jnp.stack([self.points[nodes[:, i]] for i in range(kind.nodes)], axis=1)
                w = _cells.isoparametric_weights(kind, corners, x, xi)
            w = jnp.pad(w, ((0, 0), (0, width - w.shape[1])))
            out = w if out is None else jnp.where((self.kind_of_cell[cell] == k)[:, None], w, out)
        return out

    def node_weights(self, cell, x: Positions, coords) -> tuple[Int[Array, "n k"], Float[Array, "n k"]]:
        """Each row's `cell`'s nodes and their shape-function weights at `x` (`coords`: from `locate`)."""
        return self.nodes[cell], self._weights(cell, x, coords)

    def exit_face(
        self, cell: Int[Array, " n"], x: Positions, done: Bool[Array, " n"] | None = None
    ) -> tuple[Int[Array, " n"], Int[Array, " n"]]:
        """The face of `cell` each row of `x` lies most beyond, and the cell across it (-1: a
        boundary face), as a wall needs it; rows marked `done` are not computed."""
        _, _, face, across = self._check(jnp.maximum(cell, 0), x, done)
        return face, across

    def _check(self, cell, x, done=None, warm: Hints | None = None, across: bool = True):
        """`(inside, xi, face, across)`: whether each row of `x` lies in `cell`, its coordinates
        there, the face it lies most beyond and the cell across that face (-1: the boundary;
        None unless `across`: a gather into the neighbour table that few rows need)."""
        xi, v, converged = self._coords(cell, x, done, warm)
        face = jnp.argmax(v, axis=1)
        beyond = self._across(cell, face) if across else None
        return (jnp.max(v, axis=1) <= self.containment_tolerance()) & converged, xi, face, beyond

    def _across(self, cell, face):
        """The cell across `face` of each `cell` (-1: the boundary)."""
        return self.neighbours[cell, face]

    def cell_centres(self, cell: Int[Array, " n"]) -> tuple[Positions, Float[Array, " n"]]:
        """The centre of each `cell` (the mean of its nodes: a point inside it) and its radius
        (the largest distance from the centre to a node)."""
        corners = self.points[self.nodes[cell]]
        centre = jnp.mean(corners, axis=1)
        return centre, jnp.max(jnp.linalg.norm(corners - centre[:, None], axis=-1), axis=1)

    def _walk_and_search(self, x, cell, xi, walled, found):
        """Walk from `cell` toward each row's point across the most violated face, up to
        `walk_steps` cells, then search the row's bin for a containing cell (rows `walled`: the
        bin straight away): one loop with one check per row and iteration. `(cell, found, xi)`:
        the containing cell, or for a point in no cell the last one its walk checked (the wall
        it would leave through; for a `walled` row the `cell` and `xi` given), `xi` in that
        cell. Rows already `found` take no part."""
        tol = self.containment_tolerance()
        shape = jnp.asarray(self.bin_shape, jnp.int32)
        s = (x - self.bin_origin) * self.bin_inv_size
        in_box = jnp.all((s >= -tol * shape) & (s <= shape * (1 + tol)), axis=1)
        idx = jnp.clip(jnp.floor(s).astype(jnp.int32), 0, shape - 1)
        flat = idx[:, 0]
        for axis in range(1, self.dim):
            flat = flat * self.bin_shape[axis] + idx[:, axis]
        first = self.bin_start[flat]
        count = jnp.where(in_box, self.bin_start[flat + 1] - first, 0)
        last = self.bin_cells.shape[0] - 1

        def more(carry):
            _, _, _, found, steps, j = carry
            return jnp.any(~found & ((steps < self.walk_steps) | (j < count)))

        def candidates(cell, found, steps, j):
            """The cell each row checks next: its walk's, or its bin's next (carried through the
            loop, so that the check's gathers read it instead of recomputing it)."""
            return jnp.where(found | (steps < self.walk_steps), cell, self.bin_cells[jnp.clip(first + j, 0, last)])

        def body(carry):
            candidate, result, xi, found, steps, j = carry
            walking = ~found & (steps < self.walk_steps)
            # bins are searched once no row walks: a far candidate's Newton iterations, which
            # rarely converge, would otherwise hold up every walking row's
            searching = ~found & ~walking & (j < count) & ~jnp.any(walking)
            inside, xi_c, _, across = self._check(candidate, x, ~(walking | searching))
            hit = (walking | searching) & inside
            result = jnp.where(walking | hit, candidate, result)
            xi = jnp.where((walking | hit)[:, None], xi_c.astype(xi.dtype), xi)
            moves = walking & ~inside & (across >= 0)
            steps = jnp.where(moves, steps + 1, jnp.where(walking & ~inside, self.walk_steps, steps))
            found, j = found | hit, j + searching
            return candidates(jnp.where(moves, across, candidate), found, steps, j), result, xi, found, steps, j

        steps = jnp.where(walled, self.walk_steps, 0).astype(jnp.int32)
        j = jnp.zeros(x.shape[0], jnp.int32)
        start = (candidates(cell, found, steps, j), cell, xi, found, steps, j)
        _, cell, xi, found, _, _ = jax.lax.while_loop(more, body, start)
        return cell, found, xi

    def locate(self, x: Positions, hint: Hints | Int[Array, " n"] | None) -> tuple[Hints, Bool[Array, " n"]]:
        """Where every row of `x` lies, as hints (cell, point, coordinates; not differentiable:
        cells are integers), and whether it lies inside the mesh. `hint` may also be bare cells.

        Every row is first checked in its hinted cell, which is where nearly all RK stage points
        lie, Newton starting from the hint's coordinates (none at the hinted point itself: the
        end of a step is the next step's first stage; a batch all at its hinted points, or
        `SKIP`, gets its hints back unchecked). The rows that left it walk across faces
        from the cell next to their hint, and those the walk does not settle (unknown hint,
        walked onto the mesh boundary, out of steps) are searched in their bin, in compact
        batches of the rows concerned (at most a sixteenth of the rows each). Rows hinted `SKIP`
        are not located (found, cell `SKIP`): the tracker's stopped particles.
        `exact` hints (this location's own result for these rows) are returned as they are;
        rows with no hint at all (`hint` None: seeds) are searched in their bins alone, unless
        the `lookup` starts them somewhere.
        """
        if isinstance(hint, Hints) and hint.exact:
            return hint, jnp.isfinite(hint.point[:, 0]) | (hint.cell == SKIP)
        x, n = jax.lax.stop_gradient(x), x.shape[0]
        if hint is None and self.lookup is None:
            none, everywhere = jnp.zeros(n, bool), jnp.ones(n, bool)
            cell, found, xi = self._walk_and_search(x, jnp.zeros(n, jnp.int32), jnp.zeros_like(x), everywhere, none)
            return Hints(cell, jnp.where(found[:, None], x, jnp.nan), xi), found
        if hint is None:  # seeds, probes, one point: no `lax.cond` (under `jax.vmap` a cond's
            # batched predicate turns it into a select over every table it closes over, per point)
            hint = self.hints(n, x.dtype)
            hint = eqx.tree_at(lambda h: h.cell, hint, self.lookup.cells(x))
            return self._located(x, hint, jnp.zeros(n, bool), jnp.zeros(n, bool))
        hint = jax.lax.stop_gradient(hint if isinstance(hint, Hints) else Hints.of_cells(hint, self.dim, x.dtype))
        hint = hint if self.lookup is None else self.lookup.started(x, hint)
        skip = hint.cell == SKIP
        again = (hint.cell >= 0) & jnp.all(x == hint.point, axis=1)  # located there already
        # a step's first stage is where the step before ended: nothing to locate
        return jax.lax.cond(
            jnp.all(again | skip), lambda: (hint, again | skip), lambda: self._located(x, hint, skip, again)
        )

    def _located(self, x, hint: Hints, skip, again) -> tuple[Hints, Bool[Array, " n"]]:
        """`locate` of rows not all at their hinted points (`again`): each checked in its hinted
        cell (no Newton iteration where `again`), then walked and searched in compact batches."""
        n, known = x.shape[0], hint.cell >= 0
        cell = jnp.maximum(hint.cell, 0)
        inside, xi, face, _ = self._check(cell, x, skip | again, hint, across=False)
        found = (inside & known) | skip
        cell = jnp.where(known, cell, 0)
        batch = min(n, max(64, n // 16))

        def more(carry):
            return jnp.any(carry[0])

        def body(carry):
            pending, cell, found, xi = carry
            rows = jnp.nonzero(pending, size=batch, fill_value=n)[0]
            fill = rows == n  # padding: neither walked nor searched, dropped on the way back
            take = jnp.minimum(rows, n - 1)
            # the walk starts across the violated face; a row at the mesh boundary (or with no
            # hint, or no walking at all) goes straight to its bin, keeping its hinted cell as
            # the wall it would leave by
            across = self._across(cell[take], face[take])
            wb = ~known[take] | (across < 0) | fill | (self.walk_steps == 0)
            c, f, z = self._walk_and_search(x[take], jnp.where(wb, cell[take], across), xi[take], wb, fill)
            drop = lambda a, v: a.at[rows].set(v, mode="drop")  # noqa: E731
            return drop(pending, False), drop(cell, c), drop(found, f), drop(xi, z)

        _, cell, found, xi = jax.lax.while_loop(more, body, (~found, cell, found, xi))
        return Hints(jnp.where(skip, SKIP, cell), jnp.where((found & ~skip)[:, None], x, jnp.nan), xi), found

    def cell_sizes(self, x: Positions, hint: Hints | Int[Array, " n"]) -> Float[Array, "n dim"]:
        edge = shortest_edges(self.points, self.nodes[jnp.maximum(hint.cell, 0)], self.spherical)
        return axis_sizes(edge, x, self.spherical).astype(x.dtype)

    def max_courant_rate(self) -> float:
        return mesh_max_rate(self.points, self.nodes, self.values, self.spherical, self.cell_values)

    # -- faces ------------------------------------------------------------------------------

    def face_planes(self, cell: Int[Array, " n"], face: Int[Array, " n"]) -> tuple[Positions, Positions]:
        """`(centre, normal)` of face `face` of each `cell`: a point on it and its outward unit
        normal (a quad's from its diagonals, so a warped quad gets its mean plane)."""
        return _faces.face_planes(self, cell, face)

    def boundary_faces(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The faces on the mesh boundary (host side): `(cell, face, nodes)` with `nodes` the
        `(B, 4)` node ids of each face (padded as in `face_planes`)."""
        return _faces.boundary_faces(self)

    # -- values -----------------------------------------------------------------------------

    def _interpolate(self, table, t, cell, x, xi, per_cell: bool = False):
        """Values of `table[T, P, c]` at the rows of `x` (in `cell`, parametric coordinates `xi`)
        at time `t`: the cell's shape-function weights of its nodes' values, linear in time; or
        with `per_cell` the cell's own row of `table[T, C, c]` (no weights needed)."""
        t = jnp.asarray(t, x.dtype)
        if per_cell:
            it, wt = time_weights(self.times, t)
            row = slice_rows(table, it, cell)
            return (row if self.times is None else row + wt * (slice_rows(table, it + 1, cell) - row)).astype(x.dtype)
        return node_rows(table, self.times, t, self.nodes[cell], self._weights(cell, x, xi))

    def velocity_batch(
        self, t: TimeLike, x: Positions, args: Args, hint: Hints | Int[Array, " n"]
    ) -> tuple[Positions, Hints]:
        """Velocities at the rows of `x` for the tracker's RK stages (beside no-slip walls as
        `near_wall` has them): a stage point just outside the mesh gets the value extrapolated
        from the boundary cell its walk stopped in; `SKIP` rows get 0."""
        hint, _ = self.locate(x, hint)
        values = self._interpolate(self.values, t, jnp.maximum(hint.cell, 0), x, hint.coords, self.cell_values)
        if self.near_wall is not None:
            values = near_wall_velocity(*self.near_wall, jnp.maximum(hint.cell, 0), x, values)
        return jnp.where((hint.cell == SKIP)[:, None], 0, values), hint

    def locate_batch(self, x: Positions, hint: Hints | Int[Array, " n"] | None) -> tuple[Hints, Bool[Array, " n"]]:
        return self.locate(x, hint)

    def sample_batch(self, t: TimeLike, x: Positions, hint: Hints | Int[Array, " n"]) -> dict[str, Array]:
        if self.sample_values is None:
            return {}
        hint, found = self.locate(x, hint)
        table = self._interpolate(self.sample_values, t, jnp.maximum(hint.cell, 0), x, hint.coords)
        table = jnp.where(found[:, None], table, jnp.nan)
        return sampled(table, self.sample_layout)

    def __call__(self, t: TimeLike, x: Position, args: Args = None) -> Velocity:
        """Velocity at one point; NaN outside the mesh (never a value invented by extrapolation)."""
        x = one_position(x, self.dim).astype(self.points.dtype)[None]  # located in the field's precision
        hint, found = self.locate(x, None)
        values = self._interpolate(self.values, t, jnp.maximum(hint.cell, 0), x, hint.coords, self.cell_values)
        return jnp.where(found[:, None], values, jnp.nan)[0]

    def in_domain(self, x: Position) -> Bool[Array, ""]:
        x = jnp.asarray(x)[None]
        return self.locate(x, None)[1][0]

    def probe(self, points: PointsLike, t: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
        """Values at `points` (`(n, dim)`) and at time `t` like `vtkProbeFilter`: `(values, valid)`,
        values 0 where a point lies outside the mesh."""
        points = jnp.asarray(np.asarray(points), self.points.dtype)
        values, valid = _probe(self, jnp.asarray(t, self.points.dtype), points)
        return np.asarray(values), np.asarray(valid)


@eqx.filter_jit
def _probe(field: MeshField, t, points):
    hint, found = field.locate(points, None)
    values = field._interpolate(field.values, t, jnp.maximum(hint.cell, 0), points, hint.coords, field.cell_values)
    return jnp.where(found[:, None], values, 0), found
