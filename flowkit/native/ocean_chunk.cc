// The ocean tracker's steps for a block of particles on a layered field (LayeredField: ROMS and
// CROCO s-levels, TELEMAC planes, depth-averaged models): each group of particles (`kLanes`: 16
// in the AVX-512 build, 8 in the others) carried through all the steps of a save interval before
// the next group, so that their cells' columns stay in the core's cache from stage to stage and
// step to step. A group's arithmetic (the stage points, the check of each hinted cell with
// Newton, the weights, the brackets and the velocities) runs in vectors across its lanes; walks,
// bin searches, table reads and new brackets go lane by lane, visiting only the lanes that need
// them (`for_each_lane`). Only the particles that move in the call take lanes.
//
// The arithmetic is LayeredField's (flowkit/fields/layered.py) over its surface MeshField's
// location (mesh.py, cells.py): the point's horizontal cell checked first (a triangle's
// barycentrics; a quadrilateral's coordinates by Newton, warm from the hint's, with the JAX
// path's update rule and acceptance test), then the walk across the most violated edge, then
// the point's bin; a stage point off the mesh sees the values extrapolated from the last cell
// checked. The column is the cell's shape-function mean of its nodes' columns, linear in time
// between slices; the velocity is linear in depth between the two levels around the point,
// the nearest level's above the top and below the bottom one. Each particle carries the level
// it found last: a stage checks that bracket (two levels) and finds it again only where it no
// longer holds (by bisection of the column, or, where a weight is negative (a point off its
// cell), by counting every level), so the bracket is the JAX path's count. Horizontal velocities
// are turned into degrees per second at the point's latitude on a spherical field. On a
// curvilinear grid (`grid_i`, `grid_j`: quad_cells' cells) the stages step the grid's fractional
// indices instead of positions, as GridChart does (fields/grid_chart.py): a stage point's cell
// is their floor, its position the cell's bilinear map, its velocity turned into indices per
// second by the inverse of the map's Jacobian, and the step's end mapped back to a position.
// With `walk` the step is Euler–Maruyama's (fk.EulerMaruyama: the tableau is Euler's): a random
// walk of a constant diffusivity is added to the end, its noise drawn from each row's key as
// JAX draws it (`walk_lanes`), and depths are mirrored at the surface and the floor. Particles
// that drift beside the current (`fk.particles.Windage`, `StokesDrift`, `Leeway`, `Buoyant`'s
// rise, alone or combined) step positions and add each drift's rule at every stage from the
// forcings sampled at the stage point (grid_probe.h, drift_rules.h), as the grid kernel does. After the
// stages the step's end is located, its depth kept between the surface and the sea floor there,
// and the step finished as the JAX step finishes it under
// `fk.Open` (or `fk.Reflective`, whose box first mirrors an end that left it back in and
// locates it again): an end off the mesh stops the row where its step began (OUT_OF_DOMAIN), an end
// on land (the cell's interpolated mask at least 1/2) stops it there too (BEACHED), an end not
// finite stops it (NONFINITE); the stopped rows' steps are returned in `stopped`. The status
// codes come from Python's `flowkit._status.Status` as attributes. With `locate` the kernel
// takes no step: it locates each row from the cell guessed for it (a grid's index lookup; -1:
// by its bin alone), settles its depth at `step_start[0]` and marks a row found on land BEACHED
// (the seeds, as LayeredField.settle_batch, locate_batch and beached_batch place points hinted
// nowhere).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "grid_probe.h"
#include "kernel_seam.h"
#include "xla/ffi/api/ffi.h"


namespace {

// The kernel's declared layout, in call order (as the mesh kernel's: `real` is the positions'
// precision): Python's `flowkit/tracker/ocean_kernel.py` declares the same as named tuples and checks
// them against `FlowkitOceanChunkLayout()` before it registers the targets.
#define FLOWKIT_OCEAN_INPUTS(X)                                                                 \
  X(x, real) X(status, s32) X(cell, s32) X(point, real) X(coords, real) X(release, s32)         \
  X(step_start, real) X(step_length, real) X(tableau, real) X(affine_map, real) X(convex, s32)  \
  X(nodes, s32) X(kind_of_cell, s32) X(kind_code, s32) X(neighbours, s32) X(bin_origin, real)   \
  X(bin_inv_size, real) X(bin_shape, s32) X(bin_start, s32) X(bin_cells, s32) X(depths, real)   \
  X(velocities, real) X(floor, real) X(times, real) X(land, real) X(box, real) X(keys, s32)     \
  X(first_step, s32) X(diffusivity, real) X(remainder, real) FLOWKIT_DRIFT_INPUTS(X)
#define FLOWKIT_OCEAN_RESULTS(X) \
  X(x, real) X(status, s32) X(cell, s32) X(point, real) X(coords, real) X(before, real) X(stopped, s32) \
  X(remainder, real) X(orientation, real)
#define FLOWKIT_OCEAN_ATTRS(X)                                                                           \
  X(newton_steps, int64_t) X(walk_steps, int64_t) X(tolerance, double) X(spherical, int64_t)            \
  X(active, int64_t) X(not_released, int64_t) X(out_of_domain, int64_t) X(beached, int64_t)             \
  X(nonfinite, int64_t) X(locate, int64_t) X(grid_i, int64_t) X(grid_j, int64_t) X(walk, int64_t) X(x64, int64_t)        \
  X(jumps_tag, int64_t)
// The 2-D cell kinds of the surface mesh: name, code, node count (Python checks the counts).
#define FLOWKIT_OCEAN_KINDS(X) X(Triangle, triangle, 0, 3) X(Quad, quad, 1, 4)
#define FLOWKIT_OCEAN_MAP_COLUMNS 15  // a quadrilateral's cell table row (`locator.affine_maps`)
#define FLOWKIT_OCEAN_MAX_ROWS 16     // tableau rows (stages + the end point)

enum Kind : int32_t { FLOWKIT_OCEAN_KINDS(FLOWKIT_AS_ENUM) };
constexpr int kMaxRows = FLOWKIT_OCEAN_MAX_ROWS;

// The surface mesh and its columns.
template <typename T>
struct Field {
  const T* map;  // (C, map_cols): point and inverse linear map (6), then a quad's box frame (9)
  int64_t map_cols;
  const int32_t* convex;  // (C,): 1 where the cell is a strictly convex quadrilateral (LayeredField.convex_cells)
  const int32_t* nodes;  // (C, node_cols), -1 past a triangle's 3
  int64_t node_cols;
  const int32_t* kind_of_cell;  // (C,) index into kind_code, or null for one kind
  const int32_t* kind_code;
  const int32_t* neighbours;  // (C, faces)
  int64_t faces;
  const T* bin_origin;  // (2,)
  const T* bin_inv_size;
  const int32_t* bin_shape;
  const int32_t* bin_start;
  const int32_t* bin_cells;
  const T* depths;      // (T, P, K): each node's level depths below the surface
  const T* velocities;  // (T, P * K, 3)
  const T* floor;       // (T, P, 1)
  const T* times;       // (T,), or null for one slice
  int64_t n_times;
  const T* land;  // (P,), or null
  const T* box;   // (2, dim): the walls of `fk.Reflective` (lo, hi), or null (`fk.Open`)
  int64_t points, levels;
  T tolerance, small;
  int newton_steps, walk_steps;
  bool spherical;
  int64_t grid_i, grid_j;  // a grid's cells along its two axes (quad_cells' numbering), or 0

  int32_t kind(int32_t cell) const { return kind_code[kind_of_cell ? kind_of_cell[cell] : 0]; }
};

// Where a point lies: its cell (or the last one checked), its coordinates there, its nodes' weights.
template <typename T>
struct Place {
  int32_t cell;
  T xi[2];
  bool found;
  int count;  // nodes: 3 or 4
  int32_t node[4];
  T w[4];
};

// `A @ d` with the cell table row's inverse linear map (cells.linear).
template <typename T>
inline void linear(const T* row, const T d[2], T out[2]) {
  out[0] = row[2] * d[0] + row[3] * d[1];
  out[1] = row[4] * d[0] + row[5] * d[1];
}

// A convex quadrilateral's coordinates (r, s) of the point d from its node 0, the map from
// there r e1 + s e3 + r s h (e1, e3: nodes 1 and 3 from node 0; h = e2 - e1 - e3), in closed
// form, for one point (V = T) or a group's lanes: s is a root of A s^2 + B s + C = 0
// (A = h x e3, B = d x h + e1 x e3, C = d x e1) and r of its twin (A = h x e1,
// B = d x h - e1 x e3, C = d x e3), each the root C / q, q = -(B + sign(B) sqrt(B^2 - 4AC)) / 2,
// that continues the parallelogram's (h = 0) linear one; the two chains run side by side.
// Returns where both lie within `tolerance` of [0, 1]: there they are d's only preimage in the
// cell (the map is one to one on a convex cell, and a root in [0, 1] of either quadratic is a
// coordinate of a point of it); elsewhere `r` and `s` are not to be used.
template <typename T, typename V>
inline auto solve_convex_quad(V d0, V d1, const V e[6], V tolerance, V& r, V& s) {
  const V zero{}, one = zero + T(1);
  const V h0 = e[2] - e[0] - e[4], h1 = e[3] - e[1] - e[5];
  const V dh = d0 * h1 - d1 * h0, e13 = e[0] * e[5] - e[1] * e[4];
  const V sa = h0 * e[5] - h1 * e[4], sb = dh + e13, s_c = d0 * e[1] - d1 * e[0];
  const V ra = h0 * e[1] - h1 * e[0], rb = dh - e13, r_c = d0 * e[5] - d1 * e[4];
  const V sdisc = sb * sb - T(4) * (sa * s_c), rdisc = rb * rb - T(4) * (ra * r_c);
  const V sroot = lane_sqrt<T>(sdisc > zero ? sdisc : zero), rroot = lane_sqrt<T>(rdisc > zero ? rdisc : zero);
  const V shalf = T(-0.5) * (sb < zero ? sb - sroot : sb + sroot);
  const V rhalf = T(-0.5) * (rb < zero ? rb - rroot : rb + rroot);
  s = s_c / (shalf == 0 ? one : shalf), r = r_c / (rhalf == 0 ? one : rhalf);
  return (sdisc >= zero) & (shalf != 0) & (s >= -tolerance) & (s <= one + tolerance) & (rdisc >= zero) & (rhalf != 0) &
         (r >= -tolerance) & (r <= one + tolerance);
}

// Whether y lies in `cell` (MeshField._check): its coordinates `xi` there and the edge it lies
// most beyond. A convex quadrilateral's point is solved in closed form (`solve_convex_quad`);
// where that leaves it, Newton starts, when `warm`, from `coords` of `point` moved by
// the cell's linear map, else from the centre's linearisation (MeshField._coords), and stops
// on the update rule of cells.newton_coords.
template <typename T>
__attribute__((noinline)) bool check(const Field<T>& f, int32_t cell, const T y[2], bool warm, const T point[2], const T coords[2],
                  T xi[2], int* face) {
  const T* row = f.map + cell * f.map_cols;
  T v[4];
  int faces = 3;
  bool converged = true;
  if (f.kind(cell) == kTriangle) {
    const T d[2] = {y[0] - row[0], y[1] - row[1]};
    linear(row, d, xi);
    v[0] = -(T(1) - (xi[0] + xi[1])), v[1] = -xi[0], v[2] = -xi[1];
  } else {
    faces = 4;
    const T* frame = row + 6;  // node 0, nodes 1..3 relative to it, the cell's size
    const T d[2] = {y[0] - frame[0], y[1] - frame[1]};
    T solved[2];
    if (f.convex[cell] != 0 && solve_convex_quad<T>(d[0], d[1], frame + 2, f.tolerance, solved[0], solved[1])) {
      xi[0] = solved[0], xi[1] = solved[1], *face = 0;
      return true;
    }
    if (warm) {
      const T d[2] = {y[0] - point[0], y[1] - point[1]};
      linear(row, d, xi);
      xi[0] += coords[0], xi[1] += coords[1];
    } else {
      const T d[2] = {y[0] - row[0], y[1] - row[1]};
      linear(row, d, xi);
      xi[0] += T(0.5), xi[1] += T(0.5);
    }
    xi[0] = clip(xi[0], T(-2), T(3)), xi[1] = clip(xi[1], T(-2), T(3));
    const T* r1 = frame + 2;
    const T* r2 = frame + 4;
    const T* r3 = frame + 6;
    auto residual = [&](T r, T s, T out[2]) {
      const T n1 = r * (T(1) - s), n2 = r * s, n3 = (T(1) - r) * s;
      for (int a = 0; a < 2; ++a) out[a] = n1 * r1[a] + n2 * r2[a] + n3 * r3[a] - d[a];
    };
    for (int i = 0; i < f.newton_steps; ++i) {
      const T r = xi[0], s = xi[1];
      T res[2];
      residual(r, s, res);
      // the Jacobian's columns dx/dr, dx/ds
      const T a = (T(1) - s) * r1[0] + s * r2[0] - s * r3[0], c = (T(1) - s) * r1[1] + s * r2[1] - s * r3[1];
      const T b = -r * r1[0] + r * r2[0] + (T(1) - r) * r3[0], e = -r * r1[1] + r * r2[1] + (T(1) - r) * r3[1];
      const T det = a * e - b * c;
      const T safe = det == 0 ? T(1) : det;
      const T dr = det == 0 ? T(0) : (e * res[0] - b * res[1]) / safe;
      const T ds = det == 0 ? T(0) : (a * res[1] - c * res[0]) / safe;
      xi[0] = clip(r - dr, T(-2), T(3)), xi[1] = clip(s - ds, T(-2), T(3));
      if (std::max(std::abs(xi[0] - r), std::abs(xi[1] - s)) <= f.small) break;
    }
    T res[2];
    residual(xi[0], xi[1], res);
    converged = std::max(std::abs(res[0]), std::abs(res[1])) <= f.small * frame[8];
    v[0] = -xi[0], v[1] = xi[0] - T(1), v[2] = -xi[1], v[3] = xi[1] - T(1);
  }
  *face = 0;
  for (int i = 1; i < faces; ++i)
    if (v[i] > v[*face]) *face = i;
  return v[*face] <= f.tolerance && converged;
}

// Whether y lies outside the box of a quadrilateral's nodes (its row's frame, `check`) by more
// than `check` accepts: coordinates within the tolerance of the cell and a residual within
// `small` of its size keep y within (4 small + 16 tolerance) times its size of that box.
template <typename T>
inline bool beyond_box(const Field<T>& f, const T* row, const T y[2]) {
  const T* frame = row + 6;
  const T margin = frame[8] * (T(4) * f.small + T(16) * f.tolerance);
  for (int a = 0; a < 2; ++a) {
    const T d = y[a] - frame[a];
    const T lo = std::min({T(0), frame[2 + a], frame[4 + a], frame[6 + a]});
    const T hi = std::max({T(0), frame[2 + a], frame[4 + a], frame[6 + a]});
    if (!(d >= lo - margin && d <= hi + margin)) return true;
  }
  return false;
}

// The first cell of y's bin that holds it (MeshField._walk_and_search's search); a
// quadrilateral whose box y lies beyond is passed without its Newton iterations.
template <typename T>
__attribute__((noinline)) bool search(const Field<T>& f, const T y[2], int32_t* cell, T xi[2]) {
  int64_t bin = 0;
  for (int a = 0; a < 2; ++a) {
    const T s = (y[a] - f.bin_origin[a]) * f.bin_inv_size[a];
    const T shape = static_cast<T>(f.bin_shape[a]);
    if (!(s >= -f.tolerance * shape && s <= shape * (1 + f.tolerance))) return false;  // beyond the grid, or NaN
    bin = bin * f.bin_shape[a] +
          std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(s)), 0), f.bin_shape[a] - 1);
  }
  const T none[2] = {};
  for (int32_t j = f.bin_start[bin]; j < f.bin_start[bin + 1]; ++j) {
    const int32_t candidate = f.bin_cells[j];
    if (f.kind(candidate) != kTriangle && beyond_box(f, f.map + candidate * f.map_cols, y)) continue;
    int face;
    T at[2];
    if (check(f, candidate, y, false, none, none, at, &face)) {
      *cell = candidate, xi[0] = at[0], xi[1] = at[1];
      return true;
    }
  }
  return false;
}

// y hinted nowhere, located by its bin alone (MeshField.locate). Not found: cell 0 and y's
// coordinates there, as its check leaves them.
template <typename T>
void search_unhinted(const Field<T>& f, const T y[2], Place<T>& at) {
  at.found = search(f, y, &at.cell, at.xi);
  if (!at.found) {
    const T none[2] = {};
    int face;
    at.cell = 0;
    check(f, 0, y, false, none, none, at.xi, &face);
  }
}

// y's nodes and their weights at its coordinates in its cell (`at.cell`, `at.xi`).
template <typename T>
inline void weigh(const Field<T>& f, Place<T>& at) {
  const int32_t* node = f.nodes + at.cell * f.node_cols;
  const T r = at.xi[0], s = at.xi[1];
  if (f.kind(at.cell) == kTriangle) {
    at.count = 3;
    at.w[0] = T(1) - (r + s), at.w[1] = r, at.w[2] = s;
  } else {
    at.count = 4;
    at.w[0] = (T(1) - r) * (T(1) - s), at.w[1] = r * (T(1) - s), at.w[2] = r * s, at.w[3] = (T(1) - r) * s;
  }
  for (int i = 0; i < at.count; ++i) at.node[i] = node[i];
}

// y, which does not lie in its hinted cell (`at.cell`, coordinates `at.xi`, the edge it lies most
// beyond `face`), located by the walk from there across the most violated edge, up to
// `walk_steps` cells, then by y's bin (MeshField.locate).
// Not found: the last cell the walk checked (or the hinted one at the mesh's edge) and y's
// coordinates there, from which values are extrapolated.
template <typename T>
__attribute__((noinline)) void walk(const Field<T>& f, const T y[2], int face, Place<T>& at) {
  int32_t next = f.walk_steps > 0 ? f.neighbours[at.cell * f.faces + face] : -1;
  for (int s = 0; next >= 0 && s < f.walk_steps && !at.found; ++s) {
    at.cell = next;
    const T none[2] = {};
    at.found = check(f, at.cell, y, false, none, none, at.xi, &face);
    next = f.neighbours[at.cell * f.faces + face];
  }
  int32_t holder;
  T binned[2];
  if (!at.found && search(f, y, &holder, binned)) at.found = true, at.cell = holder, at.xi[0] = binned[0], at.xi[1] = binned[1];
}

// y located from its hint (`cell`, `point`, `coords`; MeshField.locate): nothing to do at the
// hinted point itself; else the hinted cell, then `walk` (hinted nowhere: its bin). The hint
// becomes y's, and `at` its place.
template <typename T>
__attribute__((noinline)) void locate_point(const Field<T>& f, const T y[2], int32_t* cell, T point[2], T coords[2], Place<T>& at) {
  at.found = false;
  if (*cell >= 0 && y[0] == point[0] && y[1] == point[1]) {
    at.found = true, at.cell = *cell, at.xi[0] = coords[0], at.xi[1] = coords[1];
  } else if (*cell < 0) {
    search_unhinted(f, y, at);
  } else {
    at.cell = *cell;
    int face;
    at.found = check(f, at.cell, y, std::isfinite(point[0]), point, coords, at.xi, &face);
    if (!at.found) walk(f, y, face, at);
  }
  *cell = at.cell;
  point[0] = at.found ? y[0] : std::numeric_limits<T>::quiet_NaN();
  point[1] = at.found ? y[1] : std::numeric_limits<T>::quiet_NaN();
  coords[0] = at.xi[0], coords[1] = at.xi[1];
  weigh(f, at);
}

// `table[slice, row, c]` linear in time, summed over the place's nodes with their weights, at
// rows `node * stride + offset` (fields.base.node_rows): each node's row of the slice `now`, the
// next slice `next` elements on.
template <typename T>
struct Rows {
  const T* now[4];
  int64_t next;
  int count;
  const T* w;
  bool steady;

  Rows(const T* table, int64_t slice_size, int64_t width, int64_t stride, const Place<T>& at, When<T> when,
       bool steady_)
      : next(slice_size), count(at.count), w(at.w), steady(steady_) {
    for (int i = 0; i < count; ++i) now[i] = table + when.slice * slice_size + at.node[i] * stride * width;
  }
  T operator()(int64_t offset, T wt) const {
    T total = T(0);
    for (int i = 0; i < count; ++i) {
      T row = now[i][offset];
      if (!steady) row = row + wt * (now[i][offset + next] - row);
      total = i == 0 ? w[i] * row : total + w[i] * row;
    }
    return total;
  }
};

// The levels at or above depth z in the column at `at` (its bracket `below` is this count
// clipped to 1..K-1): by bisection where every weight is positive (the column then increases
// downward), else by counting every level as the JAX path does (a point off its cell).
template <typename T>
__attribute__((noinline)) int32_t levels_above(const Field<T>& f, const Place<T>& at, When<T> when, T z) {
  const Rows<T> depths(f.depths, f.points * f.levels, 1, f.levels, at, when, f.times == nullptr);
  bool positive = true;
  for (int i = 0; i < at.count; ++i) positive &= at.w[i] >= 0;
  int32_t count = 0;
  if (!positive) {
    for (int64_t k = 0; k < f.levels; ++k) count += depths(k, when.wt) <= z;
    return count;
  }
  int32_t hi = static_cast<int32_t>(f.levels);
  while (count < hi) {
    const int32_t mid = (count + hi) / 2;
    if (depths(mid, when.wt) <= z)
      count = mid + 1;
    else
      hi = mid;
  }
  return count;
}

constexpr int kMapColumns = FLOWKIT_OCEAN_MAP_COLUMNS;

// A group of particles through a save's steps, a structure of arrays with one lane each, so that
// a stage's arithmetic (the stage point, the check of its hinted cell, Newton, the weights, the
// bracket and the velocity) runs across the lanes in the compiler's vectors; the walks, searches
// and table reads go lane by lane. Each lane keeps its cell's table row and its columns at one
// time slice and bracket of levels, read again only when one of them changes: a particle stays
// in a cell and a bracket for many stages.
template <typename T>
struct Group {
  int64_t slot[kLanes];
  T x[3][kLanes], before[3][kLanes], y[3][kLanes], K[kMaxRows][3][kLanes];
  T lo[3][kLanes];                       // what rounding left out of x (Rows.remainder)
  T end[3][kLanes], end_lo[3][kLanes];   // the step's end as the stages summed it, and its remainder
  int32_t status[kLanes], release[kLanes], stopped[kLanes], level[kLanes];
  int32_t cell[kLanes], scell[kLanes];  // where x lies (the step's hint), where y lies (the stage's)
  T point[2][kLanes], coords[2][kLanes], spoint[2][kLanes], scoords[2][kLanes];
  int32_t moving[kLanes], found[kLanes];  // lane masks: -1 (true) or 0
  int32_t row_cell[kLanes], kind[kLanes], convex[kLanes], node[4][kLanes];
  T map[kMapColumns][kLanes], land[4][kLanes], w[4][kLanes];
  int32_t column_cell[kLanes], column_level[kLanes];
  int32_t column_slice[kLanes];
  T depth[2][2][4][kLanes];     // [slice][level of the bracket][node]
  T vel[2][2][3][4][kLanes];    // [slice][level][component][node]
  T floor[2][4][kLanes];        // [slice][node]
  T ix[2][kLanes], iy[2][kLanes];  // on a grid: the fractional indices of the step's start, of the stage point
  T jac[4][kLanes];                 // and the map's Jacobian there (dx/di, dx/dj, dy/di, dy/dj)
  T cos_start[kLanes], sin_start[kLanes];  // on the sphere: cos and sin of the step start's latitude
  Drifting<T> drifting;                    // the forcings' probes and values, leeway's side
};

// Lane g's cell table row, kind, nodes and land for `cell` (a triangle's fourth node: its first,
// with weight 0).
template <typename T>
FLOWKIT_HOT void read_cell(const Field<T>& f, Group<T>& q, int g, int32_t cell) {
  if (q.row_cell[g] == cell) return;
  q.row_cell[g] = cell, q.column_cell[g] = -1, q.kind[g] = f.kind(cell);
  const T* row = f.map + cell * f.map_cols;
  if (f.map_cols == kMapColumns) {  // a copy of fixed length, unrolled (the loop below branches per column)
#pragma GCC unroll 16
    for (int c = 0; c < kMapColumns; ++c) q.map[c][g] = row[c];
  } else {
    for (int c = 0; c < kMapColumns; ++c) q.map[c][g] = c < f.map_cols ? row[c] : T(0);
  }
  q.convex[g] = f.convex[cell];
  const int32_t* node = f.nodes + cell * f.node_cols;
  const int count = q.kind[g] == kTriangle ? 3 : 4;
  for (int i = 0; i < 4; ++i) {
    q.node[i][g] = node[i < count ? i : 0];
    q.land[i][g] = f.land != nullptr ? f.land[q.node[i][g]] : T(0);
  }
}

// Lane g's columns for its cell in the slices from `slice` on, at the bracket `level`, `level + 1`.
template <typename T>
FLOWKIT_HOT void read_columns(const Field<T>& f, Group<T>& q, int g, int64_t slice, int32_t level) {
  if (q.column_cell[g] == q.row_cell[g] && q.column_slice[g] == slice && q.column_level[g] == level) return;
  q.column_cell[g] = q.row_cell[g], q.column_slice[g] = static_cast<int32_t>(slice), q.column_level[g] = level;
  const int64_t K = f.levels, P = f.points;
  for (int s = 0; s < (f.times != nullptr ? 2 : 1); ++s)
    for (int i = 0; i < 4; ++i) {
      const int64_t node = q.node[i][g], at = slice + s;
      q.floor[s][i][g] = f.floor[at * P + node];
      for (int l = 0; l < (K > 1 ? 2 : 1); ++l) {
        const int64_t row = node * K + level + l;
        q.depth[s][l][i][g] = f.depths[at * P * K + row];
        for (int c = 0; c < 3; ++c) q.vel[s][l][c][i][g] = f.velocities[(at * P * K + row) * 3 + c];
      }
    }
}

// `table[slice][node]` of the lanes' cached columns, linear in time, summed over their nodes
// with their weights (fields.base.node_rows' arithmetic), into `out`.
template <typename T, typename Table>
FLOWKIT_HOT void mean(const Group<T>& q, bool steady, T wt, Table table, T out[kLanes]) {
  for (int g = 0; g < kLanes; ++g) {
    T total = T(0);
    for (int i = 0; i < 4; ++i) {
      T row = table(0, i, g);
      if (!steady) row = row + wt * (table(1, i, g) - row);
      total = i == 0 ? q.w[i][g] * row : total + q.w[i][g] * row;
    }
    out[g] = total;
  }
}


// The lanes' quadrilaterals' bilinear maps (their cell table rows' box frames, `q.map` columns
// 8-13: nodes 1-3 relative to node 0, as cells.box_map): at coordinates (r, s) the point's
// offset from node 0, and the map's Jacobian (dx/dr, dx/ds, dy/dr, dy/ds).
template <typename V>
struct BoxMaps {
  V p1, q1, p2, q2, p3, q3;

  FLOWKIT_HOT void offset(V r, V s, V& x, V& y) const {
    const V one = V{} + 1, n1 = r * (one - s), n2 = r * s, n3 = (one - r) * s;
    x = n1 * p1 + n2 * p2 + n3 * p3, y = n1 * q1 + n2 * q2 + n3 * q3;
  }
  FLOWKIT_HOT void jacobian(V r, V s, V& a, V& b, V& c, V& e) const {
    const V one = V{} + 1;
    a = (one - s) * p1 + s * p2 - s * p3, c = (one - s) * q1 + s * q2 - s * q3;
    b = -r * p1 + r * p2 + (one - r) * p3, e = -r * q1 + r * q2 + (one - r) * q3;
  }
};
template <typename T>
FLOWKIT_HOT BoxMaps<typename Lanes<T>::V> box_maps(const Group<T>& q) {
  using V = typename Lanes<T>::V;
  return {load<V>(q.map[8]), load<V>(q.map[9]), load<V>(q.map[10]), load<V>(q.map[11]), load<V>(q.map[12]), load<V>(q.map[13])};
}

// The lanes whose cell is a triangle, as a mask.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::M triangles(const Group<T>& q) {
  return load_int<T>(q.kind) == static_cast<typename Lanes<T>::I>(kTriangle);
}

// Lane g's place (its cell, nodes and weights) as the group holds it.
template <typename T>
Place<T> lane_place(const Group<T>& q, int g) {
  Place<T> at{q.scell[g], {q.scoords[0][g], q.scoords[1][g]}, true, q.kind[g] == kTriangle ? 3 : 4, {}, {}};
  for (int i = 0; i < 4; ++i) at.node[i] = q.node[i][g], at.w[i] = q.w[i][g];
  return at;
}

// The lanes' stage points y checked in their hinted cells (MeshField._check, as `check` but
// across the lanes): their coordinates and whether y lies there. In a convex quadrilateral the
// point is solved in closed form: from node 0 the map is r e1 + s e3 + r s h, so s is a root of
// a quadratic and r of its twin, each the one that continues the parallelogram's (h = 0) linear
// solution, and these two chains run side by side. Where both lie in the cell they are y's
// place (the only preimage there: the map is one to one on a convex cell, and a root in [0, 1]
// of either quadratic is its coordinate); elsewhere Newton's iterations decide (they stop lane
// by lane on the update rule). Lanes `done` take no iterations.
template <typename T>
FLOWKIT_HOT void check_lanes(const Field<T>& f, Group<T>& q, typename Lanes<T>::M done, bool quads, T xi[2][kLanes],
                             int32_t inside[kLanes], int face[kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const M triangle = triangles(q);
  auto row = [&](int c) { return load<V>(q.map[c]); };
  const V zero = V{}, one = zero + T(1), lo = zero + T(-2), hi = zero + T(3), small = zero + f.small;
  const V tolerance = zero + f.tolerance;
  const V y0 = load<V>(q.y[0]), y1 = load<V>(q.y[1]);
  const V c0 = y0 - row(0), c1 = y1 - row(1);  // from the centre's (a triangle's node 0's) image
  const V centre0 = row(2) * c0 + row(3) * c1, centre1 = row(4) * c0 + row(5) * c1;
  V r = centre0, s = centre1;  // a triangle's coordinates
  const V d0 = y0 - row(6), d1 = y1 - row(7);
  const BoxMaps<V> box = box_maps(q);
  M exact = triangle;
  if (quads) {
    const V e[6] = {box.p1, box.q1, box.p2, box.q2, box.p3, box.q3};
    V rc, sc;
    const M in_cell = solve_convex_quad<T>(d0, d1, e, tolerance, rc, sc);
    const M solved = (load_int<T>(q.convex) != 0) & in_cell;  // convex: quadrilaterals alone
    r = solved ? rc : r, s = solved ? sc : s, exact = exact | solved;
  }
  M converged = exact;
  const M newton = ~(done | exact);  // the lanes Newton steps
  if (any_lane(newton)) {
    // from the hint's coordinates moved by the cell's linear map, else from the centre's
    // linearisation (MeshField._coords)
    const M warm = (load_int<T>(q.scell) >= 0) & (vabs(load<V>(q.spoint[0])) <= std::numeric_limits<T>::max());
    const V w0 = y0 - load<V>(q.spoint[0]), w1 = y1 - load<V>(q.spoint[1]);  // from the hint's point
    const V r0 = vclip(warm ? load<V>(q.scoords[0]) + (row(2) * w0 + row(3) * w1) : centre0 + T(0.5), lo, hi);
    const V s0 = vclip(warm ? load<V>(q.scoords[1]) + (row(4) * w0 + row(5) * w1) : centre1 + T(0.5), lo, hi);
    r = exact ? r : r0, s = exact ? s : s0;
    auto residual = [&](V r, V s, V& e0, V& e1) {
      box.offset(r, s, e0, e1);
      e0 = e0 - d0, e1 = e1 - d1;
    };
    M stopped = ~newton;
    for (int i = 0; i < f.newton_steps; ++i) {
      if (!any_lane(~stopped)) break;
      V e0, e1;
      residual(r, s, e0, e1);
      V a, b, c, e;
      box.jacobian(r, s, a, b, c, e);
      const V det = a * e - b * c;
      const V safe = det == 0 ? one : det;
      const V dr = det == 0 ? zero : (e * e0 - b * e1) / safe;
      const V ds = det == 0 ? zero : (a * e1 - c * e0) / safe;
      const V nr = vclip(r - dr, lo, hi), ns = vclip(s - ds, lo, hi);
      const V change = vmax(vabs(nr - r), vabs(ns - s));
      r = stopped ? r : nr, s = stopped ? s : ns;
      stopped = stopped | (change <= small);
    }
    V e0, e1;
    residual(r, s, e0, e1);
    converged = converged | (vmax(vabs(e0), vabs(e1)) <= small * row(14));
  }
  const V v0 = triangle ? -(one - (r + s)) : -r, v1 = triangle ? -r : r - one, v2 = -s;
  const V v3 = triangle ? zero - std::numeric_limits<T>::infinity() : s - one;
  const M in = (vmax(vmax(v0, v1), vmax(v2, v3)) <= tolerance) & converged;
  M most = M{};  // the edge y lies most beyond: the first largest violation (as argmax)
  V best = v0;
  most = v1 > best ? M{} + 1 : most, best = vmax(best, v1);
  most = v2 > best ? M{} + 2 : most, best = vmax(best, v2);
  most = v3 > best ? M{} + 3 : most;
  std::memcpy(xi[0], &r, sizeof r), std::memcpy(xi[1], &s, sizeof s), store_int<T>(in, inside);
  for (int g = 0; g < kLanes; ++g) face[g] = static_cast<int>(most[g]);
}

// The lanes' stage points located (MeshField.locate): at their hinted points nothing to do; in
// their hinted cells by `check_lanes`; elsewhere lane by lane (`walk`: the walk, the bins).
// Then their nodes' weights.
template <typename T>
FLOWKIT_HOT void place(const Field<T>& f, Group<T>& q, bool quads) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const M moving = load_int<T>(q.moving), scell = load_int<T>(q.scell), hinted = scell >= 0;
  const V y0 = load<V>(q.y[0]), y1 = load<V>(q.y[1]);
  const M again = ~moving | (hinted & (y0 == load<V>(q.spoint[0])) & (y1 == load<V>(q.spoint[1])));
  const M cells = moving & hinted & (scell != load_int<T>(q.row_cell));
  for_each_lane(cells, [&](int g) { read_cell(f, q, g, q.scell[g]); });
  std::memcpy(q.found, q.moving, sizeof q.found);
  if (any_lane(~again)) {  // a step's first stage: every lane at its hint
    T xi[2][kLanes] = {};
    int32_t inside[kLanes] = {};
    int face[kLanes] = {};
    if (any_lane(~again & hinted)) check_lanes(f, q, again, quads, xi, inside, face);  // else the seeds' bins alone
    const V nan = V{} + std::numeric_limits<T>::quiet_NaN();
    auto set = [&](T* to, V value) {
      const V kept = again ? load<V>(to) : value;
      std::memcpy(to, &kept, sizeof kept);
    };
    set(q.spoint[0], y0), set(q.spoint[1], y1), set(q.scoords[0], load<V>(xi[0])), set(q.scoords[1], load<V>(xi[1]));
    const M lost = ~again & ~(load_int<T>(inside) & hinted);
    auto walk_lane = [&](int g) {
      // not in its hinted cell: the walk from there, then its bin (or its bin alone: no hint)
      const T y[2] = {q.y[0][g], q.y[1][g]};
      Place<T> at{q.scell[g], {xi[0][g], xi[1][g]}, false, 0, {}, {}};
      if (q.scell[g] >= 0)
        walk(f, y, face[g], at);
      else
        search_unhinted(f, y, at);
      q.found[g] = at.found ? -1 : 0, q.scell[g] = at.cell;
      read_cell(f, q, g, at.cell);
      q.spoint[0][g] = at.found ? y[0] : nan[g];
      q.spoint[1][g] = at.found ? y[1] : nan[g];
      q.scoords[0][g] = at.xi[0], q.scoords[1][g] = at.xi[1];
    };
    for_each_lane(lost, walk_lane);
  }
  const M triangle = triangles(q);
  const V r = load<V>(q.scoords[0]), s = load<V>(q.scoords[1]), one = V{} + T(1);
  const V w[4] = {triangle ? one - (r + s) : (one - r) * (one - s), triangle ? r : r * (one - s),
                  triangle ? s : r * s, triangle ? V{} : (one - r) * s};
  for (int i = 0; i < 4; ++i) std::memcpy(q.w[i], &w[i], sizeof w[i]);
}

// The lanes' stage points `iy` on a grid placed by their fractional indices (fields/grid_chart.py,
// GridChart.place): their cell is the indices' floor (the edge cell beyond which a point off
// the grid lies, whose map then extrapolates), their coordinates what remains, and they lie on
// the grid where the indices lie in its index box; their positions `y` are the cell's bilinear
// map, and `jac` its Jacobian (position per index), whose inverse turns a velocity into indices
// per second (`to_indices`).
template <typename T>
FLOWKIT_HOT void place_grid(const Field<T>& f, Group<T>& q) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const V zero = V{}, one = zero + T(1), tol = zero + f.tolerance;
  const V n_i = zero + static_cast<T>(f.grid_i), n_j = zero + static_cast<T>(f.grid_j);
  const V i = load<V>(q.iy[0]), j = load<V>(q.iy[1]);
  // the floor of an index clipped to the grid's cells (NaN: cell 0), by truncation of a value
  // first clipped to [-1, n] (so that the conversion to integers stays in range)
  auto corner = [&](V v, V n) {
    const V kept = v == v ? vclip(v, -one, n) : zero;
    const V truncated = __builtin_convertvector(__builtin_convertvector(kept, M), V);
    return vclip(truncated > kept ? truncated - one : truncated, zero, n - one);
  };
  const V a = corner(i, n_i), b = corner(j, n_j);
  const M cell = __builtin_convertvector(a, M) * static_cast<typename Lanes<T>::I>(f.grid_j) + __builtin_convertvector(b, M);
  const M found = (i >= -tol) & (i <= n_i + tol) & (j >= -tol) & (j <= n_j + tol);
  const M moving = load_int<T>(q.moving), moved = moving & (cell != load_int<T>(q.row_cell));
  store_int<T>(moving ? cell : load_int<T>(q.scell), q.scell);
  store_int<T>(moving ? found : load_int<T>(q.found), q.found);
  for_each_lane(moved, [&](int g) { read_cell(f, q, g, q.scell[g]); });
  const V r = i - a, s = j - b;
  std::memcpy(q.scoords[0], &r, sizeof r), std::memcpy(q.scoords[1], &s, sizeof s);
  const BoxMaps<V> box = box_maps(q);
  V y0, y1, jac[4];
  box.offset(r, s, y0, y1);
  y0 = load<V>(q.map[6]) + y0, y1 = load<V>(q.map[7]) + y1;
  box.jacobian(r, s, jac[0], jac[1], jac[2], jac[3]);
  const V w[4] = {(one - r) * (one - s), r * (one - s), r * s, (one - r) * s};
  for (int k = 0; k < 4; ++k) std::memcpy(q.w[k], &w[k], sizeof w[k]), std::memcpy(q.jac[k], &jac[k], sizeof jac[k]);
  const V nan = zero + std::numeric_limits<T>::quiet_NaN();
  const V sp0 = found ? y0 : nan, sp1 = found ? y1 : nan;
  std::memcpy(q.y[0], &y0, sizeof y0), std::memcpy(q.y[1], &y1, sizeof y1);
  std::memcpy(q.spoint[0], &sp0, sizeof sp0), std::memcpy(q.spoint[1], &sp1, sizeof sp1);
}

// The lanes whose place (cell and weights, as `place` left them) lies on land: the cell's
// interpolated mask at least 1/2 (LayeredField.beached_batch); none without a mask.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::M lanes_beached(const Field<T>& f, const Group<T>& q) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  if (f.land == nullptr) return M{};
  V wet = V{};
  for (int i = 0; i < 4; ++i) wet += load<V>(q.w[i]) * load<V>(q.land[i]);
  return M(wet >= T(0.5));
}

// Lane g's fractional grid indices (the step's start), from the hint that locates x there
// (located first where it does not: GridChart.indices). Each step then starts where the last
// one ended: cell + coordinates is the end's indices, exactly.
template <typename T>
__attribute__((noinline)) void grid_indices(const Field<T>& f, Group<T>& q, int g) {
  int32_t cell = q.cell[g];
  T point[2] = {q.point[0][g], q.point[1][g]}, coords[2] = {q.coords[0][g], q.coords[1][g]};
  if (!(cell >= 0 && point[0] == q.x[0][g] && point[1] == q.x[1][g])) {
    Place<T> at;
    const T y[2] = {q.x[0][g], q.x[1][g]};
    locate_point(f, y, &cell, point, coords, at);
  }
  cell = std::max(cell, 0);
  q.ix[0][g] = static_cast<T>(cell / f.grid_j) + coords[0];
  q.ix[1][g] = static_cast<T>(cell % f.grid_j) + coords[1];
}

// The columns of the lanes in `lanes` whose cache does not hold their cell, bracket and `slice`
// read again (`read_columns`), lane by lane.
template <typename T>
FLOWKIT_HOT void read_stale_columns(const Field<T>& f, Group<T>& q, typename Lanes<T>::M lanes, int64_t slice) {
  const typename Lanes<T>::M stale =
      lanes & ((load_int<T>(q.column_cell) != load_int<T>(q.row_cell)) | (load_int<T>(q.column_level) != load_int<T>(q.level)) |
               (load_int<T>(q.column_slice) != static_cast<typename Lanes<T>::I>(slice)));
  for_each_lane(stale, [&](int g) { read_columns(f, q, g, slice, q.level[g]); });
}

// cos(latitude) at the lanes' stage points, turned from their step start's (`cos_near`).
template <typename T>
FLOWKIT_HOT typename Lanes<T>::V lanes_cos_latitude(const Group<T>& q) {
  using V = typename Lanes<T>::V;
  return cos_near<T>(load<V>(q.y[1]), load<V>(q.x[1]), load<V>(q.cos_start), load<V>(q.sin_start),
                     load_int<T>(q.moving));
}

// The lanes' velocities at their stage points (LayeredField._bracket, _on_levels): each lane's
// bracket of levels kept where it still holds, else found again (`levels_above`).
template <typename T>
FLOWKIT_HOT void velocity(const Field<T>& f, Group<T>& q, When<T> when, int dim, T u[3][kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const int32_t K = static_cast<int32_t>(f.levels);
  const bool steady = f.times == nullptr;
  const M moving = load_int<T>(q.moving), level = load_int<T>(q.level);
  read_stale_columns(f, q, moving, when.slice);
  T weight[kLanes] = {};
  if (K > 1) {
    T d0[kLanes], d1[kLanes];
    mean(q, steady, when.wt, [&](int s, int i, int g) { return q.depth[s][0][i][g]; }, d0);
    mean(q, steady, when.wt, [&](int s, int i, int g) { return q.depth[s][1][i][g]; }, d1);
    // a lane's bracket holds where its weights are all positive and d0 <= z < d1 (or it is the top
    // or bottom bracket, which extrapolates)
    const V z = load<V>(q.y[2]), zero = V{};
    const M positive = (load<V>(q.w[0]) >= zero) & (load<V>(q.w[1]) >= zero) & (load<V>(q.w[2]) >= zero) &
                       (load<V>(q.w[3]) >= zero);
    const M held = positive & ((level == 0) | (load<V>(d0) <= z)) & ((level == K - 2) | (load<V>(d1) > z));
    const M again = moving & ~held;
    for_each_lane(again, [&](int g) {
      q.level[g] = clip<int32_t>(levels_above(f, lane_place(q, g), when, q.y[2][g]), 1, K - 1) - 1;
      read_columns(f, q, g, when.slice, q.level[g]);
      T one[kLanes];
      mean(q, steady, when.wt, [&](int s, int i, int h) { return q.depth[s][0][i][h]; }, one);
      d0[g] = one[g];
      mean(q, steady, when.wt, [&](int s, int i, int h) { return q.depth[s][1][i][h]; }, one);
      d1[g] = one[g];
    });
    const V lo = load<V>(d0), gap = vmax(load<V>(d1) - lo, zero + std::numeric_limits<T>::min());
    const V clipped = vclip((z - lo) / gap, zero, zero + T(1));
    std::memcpy(weight, &clipped, sizeof clipped);
  }
  for (int c = 0; c < dim; ++c) {
    T top[kLanes], bottom[kLanes] = {};
    mean(q, steady, when.wt, [&](int s, int i, int g) { return q.vel[s][0][c][i][g]; }, top);
    if (K > 1) mean(q, steady, when.wt, [&](int s, int i, int g) { return q.vel[s][1][c][i][g]; }, bottom);
    // a weight of 0 (above the top level: the surface's particles) adds nothing of the level below
    const V t = load<V>(top), b = load<V>(bottom), wv = load<V>(weight);
    const V blended = wv != 0 ? t + wv * (b - t) : t;
    std::memcpy(u[c], &blended, sizeof blended);
  }
  if (f.spherical && f.grid_j == 0) {
    const V cos_lat = lanes_cos_latitude(q);
    const V east = load<V>(u[0]) * (static_cast<T>(kDegrees) / (static_cast<T>(kEarthRadius) * cos_lat));
    const V north = load<V>(u[1]) * static_cast<T>(kDegrees / kEarthRadius);
    std::memcpy(u[0], &east, sizeof east), std::memcpy(u[1], &north, sizeof north);
  }
}

// The lanes' horizontal velocities `u` (m/s, or metres' units a second) in a grid's indices per
// second: the inverse of the cell's map's Jacobian (`jac`, in degrees or metres per index) and,
// on the sphere, the metric (degrees per metre at the stage point's latitude), with one division.
template <typename T>
FLOWKIT_HOT void to_indices(const Field<T>& f, const Group<T>& q, T u[3][kLanes]) {
  using V = typename Lanes<T>::V;
  const V da = load<V>(q.jac[0]), db = load<V>(q.jac[1]), dc = load<V>(q.jac[2]), de = load<V>(q.jac[3]);
  const V u0 = load<V>(u[0]), u1 = load<V>(u[1]), det = da * de - db * dc;
  V along_i, along_j;
  if (f.spherical) {  // u0 in degrees a second is u0 / cos * kDegrees / R
    const V cos_lat = lanes_cos_latitude(q);
    const V inv = static_cast<T>(kDegrees / kEarthRadius) / (det * cos_lat);
    along_i = (de * u0 - db * (u1 * cos_lat)) * inv, along_j = (da * (u1 * cos_lat) - dc * u0) * inv;
  } else {
    const V inv = T(1) / det;
    along_i = (de * u0 - db * u1) * inv, along_j = (da * u1 - dc * u0) * inv;
  }
  std::memcpy(u[0], &along_i, sizeof along_i), std::memcpy(u[1], &along_j, sizeof along_j);
}

struct Codes {
  int32_t active, not_released, out_of_domain, beached, nonfinite;
};

// Lane g's end located again where a wall moved it (AbstractPointWalls.apply_batch), from the
// place the integrator found, and its weights and cell there.
template <typename T>
__attribute__((noinline)) void relocate(const Field<T>& f, Group<T>& q, int g) {
  Place<T> at;
  const T y[2] = {q.y[0][g], q.y[1][g]};
  T point[2] = {q.spoint[0][g], q.spoint[1][g]}, coords[2] = {q.scoords[0][g], q.scoords[1][g]};
  locate_point(f, y, &q.scell[g], point, coords, at);
  q.found[g] = at.found ? -1 : 0;
  for (int d = 0; d < 2; ++d) q.spoint[d][g] = point[d], q.scoords[d][g] = coords[d];
  read_cell(f, q, g, q.scell[g]);
  for (int i = 0; i < 4; ++i) q.w[i][g] = i < at.count ? at.w[i] : T(0);
}

// erfinv(u) for u in (-1, 1): Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011; as XLA's), refined in double precision by two Newton
// steps on erf.
template <typename T>
T erfinv(T u) {
  const float x = static_cast<float>(u);
  float w = -std::log((1.0f - x) * (1.0f + x)), p;  // as Giles writes it: faster than log1p, as accurate for p(w)
  if (w < 5.0f) {
    w -= 2.5f;
    p = 2.81022636e-08f;
    for (float c : {3.43273939e-07f, -3.5233877e-06f, -4.39150654e-06f, 0.00021858087f, -0.00125372503f,
                    -0.00417768164f, 0.246640727f, 1.50140941f})
      p = c + p * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    p = -0.000200214257f;
    for (float c : {0.000100950558f, 0.00134934322f, -0.00367342844f, 0.00573950773f, -0.0076224613f,
                    0.00943887047f, 1.00167406f, 2.83297682f})
      p = c + p * w;
  }
  T y = static_cast<T>(p * x);
  if (sizeof(T) == 8)
    for (int i = 0; i < 2; ++i) y -= (std::erf(y) - u) / (T(1.1283791670955126) * std::exp(-y * y));
  return y;
}

// A random walk's settings (`fk.EulerMaruyama`, `tracker/ocean_kernel.py`): none, a constant
// diffusivity per axis (position units squared a second), or `fk.diffusion.Horizontal`'s
// constant Kh and Kv in m^2/s on the sphere; each row's key (JAX's raw key data) and the
// global index of the call's first step.
enum WalkKind : int { kNoWalk = 0, kConstant = 1, kHorizontal = 2 };
template <typename T>
struct Walk {
  int kind;
  const uint32_t* keys;  // (n, 2)
  int32_t first_step;
  T diffusivity[3];
  T kh;  // Horizontal's Kh in degrees of latitude squared a second

  Walk(int kind_, const uint32_t* keys_, int32_t first_step_, const T* k)
      : kind(kind_), keys(keys_), first_step(first_step_), diffusivity{k[0], k[1], k[2]} {
    constexpr double metres = kRadians * kEarthRadius;  // in a degree of latitude
    kh = k[0] / static_cast<T>(metres * metres);
  }
};

// The moving lanes' random walks over step k from their step's start x (EulerMaruyama.walk),
// added to their ends y: JAX's `normal` of each row's key folded with the step, one draw per
// axis (`uniform` on [nextafter(-1, 0), 1) from the draw's bits, then sqrt(2) erfinv), times
// sqrt(|h|) and sqrt(2K), plus the drift correction times h. The keys are hashed in vectors
// across the lanes.
template <typename T>
FLOWKIT_HOT void walk_lanes(const Walk<T>& walk, Group<T>& q, int64_t k, T h, int dim) {
  typedef uint32_t U __attribute__((vector_size(kLanes * sizeof(uint32_t))));
  U k0, k1;
  for (int g = 0; g < kLanes; ++g) k0[g] = walk.keys[2 * q.slot[g]], k1[g] = walk.keys[2 * q.slot[g] + 1];
  U f0, f1;  // fold_in(key, step): the hash of (0, step)
  threefry2x32(k0, k1, U{}, U{} + static_cast<uint32_t>(walk.first_step + k), f0, f1);
  T K[3][kLanes], drift[3][kLanes] = {};
  for (int g = 0; g < kLanes; ++g) {
    for (int d = 0; d < 3; ++d) K[d][g] = walk.diffusivity[d];
    if (walk.kind == kHorizontal && q.moving[g]) {  // Kh in degrees squared a second at x's latitude, and the metric term
      const T lat = q.x[1][g], radians = static_cast<T>(kRadians);
      const T cos_lat = std::max(q.cos_start[g], T(1e-6));  // the step start's (Horizontal walks on the sphere)
      K[0][g] = walk.kh / (cos_lat * cos_lat), K[1][g] = walk.kh;
      drift[1][g] = -K[1][g] * std::tan(clip(lat, T(-89.9), T(89.9)) * radians) * radians;
    }
  }
  const T lo = std::nextafter(T(-1), T(0)), root = std::sqrt(std::abs(h));
  for (int d = 0; d < dim; ++d) {
    U b0, b1;
    threefry2x32(f0, f1, U{}, U{} + static_cast<uint32_t>(d), b0, b1);
    for (int g = 0; g < kLanes; ++g) {
      if (!q.moving[g]) continue;
      T u;
      if constexpr (sizeof(T) == 4) {
        const uint32_t mantissa = ((b0[g] ^ b1[g]) >> 9) | 0x3F800000u;
        float f;
        std::memcpy(&f, &mantissa, sizeof f);
        u = static_cast<T>(f) - T(1);
      } else {
        const uint64_t bits = (static_cast<uint64_t>(b0[g]) << 32) | b1[g];
        const uint64_t mantissa = (bits >> 12) | 0x3FF0000000000000ull;
        double f;
        std::memcpy(&f, &mantissa, sizeof f);
        u = static_cast<T>(f) - T(1);
      }
      u = std::max(lo, u * (T(1) - lo) + lo);
      const T noise = static_cast<T>(1.4142135623730951) * erfinv(u) * root;
      q.y[d][g] = q.y[d][g] + (drift[d][g] * h + std::sqrt(2 * K[d][g]) * noise);
    }
  }
}

// What every group's steps share: the field, the codes, the tableau and the steps' times.
template <typename T>
struct Steps {
  const Field<T>& f;
  Codes codes;
  int dim, rows;
  const T (*a)[kMaxRows];
  const T* h_step;
  const When<T>* when;  // (steps, rows)
  bool quads;
  Walk<T> walk;
  const Drifts<T>& drifts;
};

// The drifts added to the lanes' rates at stage i of step k (steps of positions: Python charts
// tracers alone), out of line: a tracer's step keeps its code as it was.
template <typename T>
__attribute__((noinline)) void drift_stage(const Steps<T>& s, Group<T>& q, int64_t k, int i) {
  using V = typename Lanes<T>::V;
  const Field<T>& f = s.f;
  const V east_factor =
      f.spherical ? static_cast<T>(kDegrees) / (static_cast<T>(kEarthRadius) * lanes_cos_latitude(q)) : V{} + 1;
  add_drifts(s.drifts, q.drifting, q.y, load_int<T>(q.moving), k, i, s.dim, f.spherical, east_factor, q.K[i]);
}

// Step k of a group's lanes: the stages, the end located, kept in the water and finished as the
// JAX step finishes it under `fk.Open`, then the release rule.
template <typename T>
__attribute__((noinline)) void step_group(const Steps<T>& s, Group<T>& q, int64_t k) {
  const Field<T>& f = s.f;
  const Codes& codes = s.codes;
  const int stages = s.rows - 1, dim = s.dim;
  const T h = s.h_step[k];
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  using I = typename Lanes<T>::I;
  // in vectors, as the stages read these masks and hints (a lane's scalar store then a vector's
  // load of it waits for the store to retire)
  const M moving = h != 0 ? M(load_int<T>(q.status) == static_cast<I>(codes.active)) : M{};
  store_int<T>(moving, q.moving);
  const bool any = any_lane(moving);
  std::memcpy(q.scell, q.cell, sizeof q.cell), std::memcpy(q.spoint, q.point, sizeof q.point);
  std::memcpy(q.scoords, q.coords, sizeof q.coords);
  for (int d = 0; d < dim; ++d) {
    const V before = moving ? load<V>(q.x[d]) : load<V>(q.before[d]);
    std::memcpy(q.before[d], &before, sizeof before);
  }
  if (f.spherical && any) {
    V cos, sin;
    vcos_sin_latitude<T>(load<V>(q.x[1]) * static_cast<T>(kRadians), cos, sin);
    std::memcpy(q.cos_start, &cos, sizeof cos), std::memcpy(q.sin_start, &sin, sizeof sin);
  }
  const bool grid = f.grid_j > 0;  // steps of the grid's fractional indices, not of positions
  // positions summed compensated (explicit Runge–Kutta steps of positions; not a grid's indices,
  // not a random walk: their JAX steps return no remainder)
  const bool compensates = !grid && s.walk.kind == kNoWalk;
  for (int i = 0; i < s.rows && any; ++i) {
    for (int d = 0; d < dim; ++d) {
      T sum[kLanes] = {};
      for (int j = 0; j < std::min(i, stages); ++j) {
        const T a = s.a[i][j];
        if (a != 0)
          for (int g = 0; g < kLanes; ++g) sum[g] += a * q.K[j][d][g];
      }
      if (grid && d < 2)
        for (int g = 0; g < kLanes; ++g) q.iy[d][g] = q.ix[d][g] + h * sum[g];
      else if (i < stages)
        for (int g = 0; g < kLanes; ++g) q.y[d][g] = q.x[d][g] + h * sum[g];
      else  // the step's end, summed compensated
        for (int g = 0; g < kLanes; ++g) compensated_sum(q.x[d][g], h * sum[g], q.lo[d][g], q.y[d][g], q.end_lo[d][g]);
      if (i == stages) std::memcpy(q.end[d], q.y[d], sizeof q.end[d]);
    }
    if (i == stages && s.walk.kind != kNoWalk) walk_lanes(s.walk, q, k, h, dim);  // Euler–Maruyama
    if (grid)
      place_grid(f, q);
    else
      place(f, q, s.quads);
    if (i < stages) {
      velocity(f, q, s.when[k * s.rows + i], dim, q.K[i]);
      if (!s.drifts.drifts.empty()) drift_stage(s, q, k, i);
      if (grid) to_indices(f, q, q.K[i]);
    }
  }
  if (any && !s.drifts.drifts.empty()) prefetch_forcings(s.drifts, q.drifting, load_int<T>(q.moving), k);
  if (any) {
    const When<T> end = s.when[k * s.rows + stages];
    const M moving = load_int<T>(q.moving);
    if (dim == 3) {
      const M wet = moving & load_int<T>(q.found);
      read_stale_columns(f, q, wet, end.slice);
      T floor_lanes[kLanes];
      mean(q, f.times == nullptr, end.wt, [&](int t, int i, int g) { return q.floor[t][i][g]; }, floor_lanes);
      const V floor = load<V>(floor_lanes);
      V z = load<V>(q.y[2]);
      if (s.walk.kind != kNoWalk) {  // a random walk mirrored at the surface and the sea floor
        z = vabs(z);
        z = z > floor ? 2 * floor - z : z;
      }
      const V zero = V{}, above = z < zero ? zero : z, kept = floor < above ? floor : above;  // clip(z, 0, floor)
      const V y2 = wet ? kept : load<V>(q.y[2]);
      std::memcpy(q.y[2], &y2, sizeof y2);
    }
    M finite = moving;
    for (int d = 0; d < dim; ++d) {
      const V v = load<V>(q.y[d]);
      finite &= vabs(v) <= std::numeric_limits<T>::max();
    }
    bool relocated[kLanes] = {};
    if (f.box != nullptr)
      for (int g = 0; g < kLanes; ++g)
        if (q.moving[g] && (relocated[g] = box_fold(f.box, dim, q.y, g))) relocate(f, q, g);
    const M found = load_int<T>(q.found), beached = lanes_beached(f, q);
    const M code = moving & ~finite ? M{} + static_cast<I>(codes.nonfinite)
                   : ~found     ? M{} + static_cast<I>(codes.out_of_domain)
                   : beached    ? M{} + static_cast<I>(codes.beached)
                                : M{} + static_cast<I>(codes.active);
    if (s.drifts.jibing != nullptr) jibe_lanes(s.drifts, q.drifting, q.slot, s.walk.keys, s.walk.first_step + k, moving & finite, h);
    const M stop = moving & (code != static_cast<I>(codes.active)), keep = moving & ~stop;
    store_int<T>(stop ? code : load_int<T>(q.status), q.status);
    store_int<T>(stop ? M{} + static_cast<I>(k) : load_int<T>(q.stopped), q.stopped);
    auto take = [&](T* to, const T* from) {
      const V kept = keep ? load<V>(from) : load<V>(to);
      std::memcpy(to, &kept, sizeof kept);
    };
    for (int d = 0; d < dim; ++d) {
      // what rounding left out of the end where the row took it as it is (0 where settling, a
      // wall or a stop set it; kept where the row did not move): Rows.remainder's rule
      const V y = load<V>(q.y[d]), lo = load<V>(q.lo[d]);
      const V left = compensates ? (y == load<V>(q.end[d]) ? load<V>(q.end_lo[d]) : V{}) : V{};
      const V next = keep ? left : moving ? V{} : lo;
      std::memcpy(q.lo[d], &next, sizeof next);
      take(q.x[d], q.y[d]);
    }
    for (int d = 0; d < 2; ++d) take(q.point[d], q.spoint[d]), take(q.coords[d], q.scoords[d]);
    store_int<T>(keep ? load_int<T>(q.scell) : load_int<T>(q.cell), q.cell);
    if (grid) {
      for (int d = 0; d < 2; ++d) take(q.ix[d], q.iy[d]);
      if (f.box != nullptr)
        for (int g = 0; g < kLanes; ++g)
          if (relocated[g] && keep[g]) grid_indices(f, q, g);
    }
  }
  const M status = load_int<T>(q.status);
  const M released = (status == static_cast<I>(codes.not_released)) & (load_int<T>(q.release) == static_cast<I>(k));
  store_int<T>(released ? M{} + static_cast<I>(codes.active) : status, q.status);
}

enum Input : size_t { FLOWKIT_OCEAN_INPUTS(FLOWKIT_INPUT_INDEX) };
enum Result : size_t { FLOWKIT_OCEAN_RESULTS(FLOWKIT_RESULT_INDEX) };

template <ffi::DataType DT>
ffi::Error Chunk(ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
  FLOWKIT_OCEAN_INPUTS(FLOWKIT_READ_INPUT)
  FLOWKIT_OCEAN_RESULTS(FLOWKIT_READ_RESULT)
  FLOWKIT_OCEAN_ATTRS(FLOWKIT_READ_ATTR)
  using T = ffi::NativeType<DT>;
  const int64_t n = in_status.element_count();
  const int dim = static_cast<int>(in_x.dimensions()[1]);
  const int64_t steps = in_step_start.element_count();
  const int rows_ = static_cast<int>(in_tableau.dimensions()[0]);
  if (rows_ > kMaxRows || rows_ < 2) return ffi::Error::InvalidArgument("ocean chunk: tableau rows out of range");
  if (dim != 2 && dim != 3) return ffi::Error::InvalidArgument("ocean chunk: positions have 2 or 3 coordinates");
  const auto map_dims = in_affine_map.dimensions();
  if (map_dims[1] != 6 && map_dims[1] != FLOWKIT_OCEAN_MAP_COLUMNS)
    return ffi::Error::InvalidArgument("ocean chunk: a 2-D cell table has 6 or 15 columns");
  if (in_convex.element_count() != map_dims[0])
    return ffi::Error::InvalidArgument("ocean chunk: one convexity flag per cell");
  const auto depth_dims = in_depths.dimensions();  // (T, P, K)
  const int64_t slices = depth_dims[0], columns = depth_dims[1] * depth_dims[2];
  if (in_velocities.element_count() != slices * columns * 3 || in_floor.element_count() != slices * depth_dims[1])
    return ffi::Error::InvalidArgument("ocean chunk: velocities (T, P * K, 3) and floor (T, P, 1) must match depths (T, P, K)");
  if ((in_times.element_count() != 0 && in_times.element_count() != slices) ||
      (in_times.element_count() == 0 && slices != 1))
    return ffi::Error::InvalidArgument("ocean chunk: one time per slice, or no times for one slice");
  if ((in_land.element_count() != 0 && in_land.element_count() != depth_dims[1]) ||
      (in_box.element_count() != 0 && in_box.element_count() != 2 * dim))
    return ffi::Error::InvalidArgument("ocean chunk: land holds one value per node, a box its lo and hi");
  if (in_remainder.element_count() != n * dim)
    return ffi::Error::InvalidArgument("ocean chunk: a remainder per row and coordinate");
  if (in_keys.element_count() != 2 * n || in_first_step.element_count() != 1 || in_diffusivity.element_count() != 3 ||
      walk < kNoWalk || walk > kHorizontal)
    return ffi::Error::InvalidArgument("ocean chunk: a key pair per row, one first step, three diffusivities, a walk's kind 0-2");
  const Field<T> f{in_affine_map.typed_data(),
                   map_dims[1],
                   in_convex.typed_data(),
                   in_nodes.typed_data(),
                   in_nodes.dimensions()[1],
                   in_kind_of_cell.element_count() > 0 ? in_kind_of_cell.typed_data() : nullptr,
                   in_kind_code.typed_data(),
                   in_neighbours.typed_data(),
                   in_neighbours.dimensions()[1],
                   in_bin_origin.typed_data(),
                   in_bin_inv_size.typed_data(),
                   in_bin_shape.typed_data(),
                   in_bin_start.typed_data(),
                   in_bin_cells.typed_data(),
                   in_depths.typed_data(),
                   in_velocities.typed_data(),
                   in_floor.typed_data(),
                   in_times.element_count() > 0 ? in_times.typed_data() : nullptr,
                   static_cast<int64_t>(in_times.element_count()),
                   in_land.element_count() > 0 ? in_land.typed_data() : nullptr,
                   in_box.element_count() > 0 ? in_box.typed_data() : nullptr,
                   depth_dims[1],
                   depth_dims[2],
                   static_cast<T>(tolerance),
                   std::sqrt(std::numeric_limits<T>::epsilon()),
                   static_cast<int>(newton_steps),
                   static_cast<int>(walk_steps),
                   spherical != 0,
                   grid_i,
                   grid_j};
  const Codes codes{static_cast<int32_t>(active), static_cast<int32_t>(not_released),
                    static_cast<int32_t>(out_of_domain), static_cast<int32_t>(beached),
                    static_cast<int32_t>(nonfinite)};
  const T* tab = in_tableau.typed_data();
  T a[kMaxRows][kMaxRows], c[kMaxRows];
  for (int i = 0; i < rows_; ++i) {
    for (int j = 0; j < rows_; ++j) a[i][j] = tab[i * (rows_ + 1) + j];
    c[i] = tab[i * (rows_ + 1) + rows_];
  }
  const T* t_start = in_step_start.typed_data();
  const T* h_step = in_step_length.typed_data();
  // each row's time slice and weight in time, the same for every particle (and the end's, for the floor)
  std::vector<When<T>> when(steps * rows_);
  for (int64_t k = 0; k < steps; ++k)
    for (int i = 0; i < rows_; ++i) when[k * rows_ + i] = when_at(f.times, f.n_times, t_start[k] + c[i] * h_step[k]);
  bool quads = false;  // a mesh of triangles alone takes no Newton iterations
  for (int64_t k = 0; k < in_kind_code.element_count(); ++k) quads |= in_kind_code.typed_data()[k] == kQuad;
  const T* x0 = in_x.typed_data();
  const T* point0 = in_point.typed_data();
  const T* coords0 = in_coords.typed_data();
  const int32_t* cell0 = in_cell.typed_data();
  const int32_t* status0 = in_status.typed_data();
  const int32_t* release0 = in_release.typed_data();
  T* x_out = out_x->typed_data();
  T* before_out = out_before->typed_data();
  const T* lo0 = in_remainder.typed_data();
  T* lo_out = out_remainder->typed_data();
  T* point_out = out_point->typed_data();
  T* coords_out = out_coords->typed_data();
  if (locate != 0) {  // the seeds, a group of lanes at a time: no steps
    const When<T> start = when_at(f.times, f.n_times, t_start[0]);
    Group<T> q{};
    std::fill(q.row_cell, q.row_cell + kLanes, -1);  // no cell's row held yet (then kept from group to group)
    for (int64_t first = 0; first < n; first += kLanes) {
      const int count = static_cast<int>(std::min<int64_t>(kLanes, n - first));
      for (int g = 0; g < kLanes; ++g) {  // lanes past the end: copies of the last, not written
        const int64_t p = first + std::min(g, count - 1);
        for (int d = 0; d < dim; ++d) q.y[d][g] = x0[dim * p + d];
        q.scell[g] = cell0[p], q.moving[g] = -1;
        q.spoint[0][g] = q.spoint[1][g] = std::numeric_limits<T>::quiet_NaN();
      }
      place(f, q, quads);
      const typename Lanes<T>::M beached = lanes_beached(f, q);
      for (int g = 0; g < count; ++g) {
        const int64_t p = first + g;
        const bool found = q.found[g] != 0;
        T coords[2] = {q.scoords[0][g], q.scoords[1][g]};
        if (!found && cell0[p] < 0) coords[0] = coords[1] = T(0);  // searched in its bin alone
        T y[3];
        for (int d = 0; d < dim; ++d) y[d] = q.y[d][g];
        if (found && dim == 3) {  // its depth settled at step_start[0]
          const Rows<T> floor(f.floor, f.points, 1, 1, lane_place(q, g), start, f.times == nullptr);
          y[2] = clip(y[2], T(0), floor(0, start.wt));
        }
        // element by element: GCC made the loop over `dim` a call to memcpy per row (9 % of the seeds' program)
        for (int d = 0; d < 3; ++d)
          if (d < dim) x_out[dim * p + d] = y[d], before_out[dim * p + d] = y[d], lo_out[dim * p + d] = T(0);
        for (int d = 0; d < 2; ++d) point_out[2 * p + d] = q.spoint[d][g], coords_out[2 * p + d] = coords[d];
        out_cell->typed_data()[p] = found ? q.scell[g] : -1;
        out_status->typed_data()[p] = found && beached[g] ? static_cast<int32_t>(codes.beached) : status0[p];
        out_stopped->typed_data()[p] = -1;
        out_orientation->typed_data()[p] = T(1);
      }
    }
    return ffi::Error::Success();
  }
  const Walk<T> random_walk(static_cast<int>(walk), reinterpret_cast<const uint32_t*>(in_keys.typed_data()),
                           in_first_step.typed_data()[0], in_diffusivity.typed_data());
  Drifts<T> drifts;
  const decltype(in_forcing_0) forcing_values[kMaxForcings] = {in_forcing_0, in_forcing_1, in_forcing_2};
  const ffi::Error drift_error =
      drifts_from<T>(forcing_values, in_forcing_axes, in_forcing_times, in_forcing_ints, in_forcing_reals, in_drift_kinds,
                     in_drift_numbers, in_orientation, in_coefficients, n, dim, f.spherical, t_start, h_step, c, steps,
                     rows_, drifts);
  if (drift_error.failure()) return drift_error;
  if (!drifts.drifts.empty() && f.grid_j > 0)
    return ffi::Error::InvalidArgument("ocean chunk: drifting particles step positions, not a grid's indices (grid_i, grid_j 0)");
  drifts.x64 = x64 != 0, drifts.jumps_tag = static_cast<uint32_t>(jumps_tag);
  const Steps<T> all{f, codes, dim, rows_, a, h_step, when.data(), quads, random_walk, drifts};
  // Only particles that move in this call take lanes (active, or released in it); the others
  // leave as they came.
  std::vector<int64_t> live;
  live.reserve(n);
  for (int64_t p = 0; p < n; ++p) {
    if (status0[p] == codes.active || (status0[p] == codes.not_released && release0[p] >= 0)) {
      live.push_back(p);
      continue;
    }
    for (int d = 0; d < dim; ++d) {
      x_out[dim * p + d] = before_out[dim * p + d] = x0[dim * p + d];
      lo_out[dim * p + d] = lo0[dim * p + d];
    }
    for (int d = 0; d < 2; ++d) point_out[2 * p + d] = point0[2 * p + d], coords_out[2 * p + d] = coords0[2 * p + d];
    out_cell->typed_data()[p] = cell0[p];
    out_status->typed_data()[p] = status0[p];
    out_stopped->typed_data()[p] = -1;
    out_orientation->typed_data()[p] = drifts.orientation != nullptr ? drifts.orientation[p] : T(1);
  }
  const int64_t n_live = static_cast<int64_t>(live.size());
  Group<T> q{};
  for (int64_t first = 0; first < n_live; first += kLanes) {
    const int count = static_cast<int>(std::min<int64_t>(kLanes, n_live - first));
    for (int g = 0; g < kLanes; ++g) {  // lanes past the end: copies of the last, not written
      const int64_t p = live[first + std::min(g, count - 1)];
      for (int d = 0; d < dim; ++d) q.x[d][g] = q.before[d][g] = x0[dim * p + d], q.lo[d][g] = lo0[dim * p + d];
      for (int d = 0; d < 2; ++d) q.point[d][g] = point0[2 * p + d], q.coords[d][g] = coords0[2 * p + d];
      q.cell[g] = cell0[p], q.status[g] = status0[p], q.release[g] = release0[p], q.slot[g] = p;
      q.stopped[g] = -1, q.level[g] = 0, q.row_cell[g] = -1, q.column_cell[g] = -1;
      drifts.load_lane(q.drifting, g, p);
      if (f.grid_j > 0) grid_indices(f, q, g);
    }
    q.drifting.reset();
    for (int64_t k = 0; k < steps; ++k) step_group(all, q, k);
    for (int g = 0; g < count; ++g) {
      const int64_t p = live[first + g];
      for (int d = 0; d < dim; ++d) {
        x_out[dim * p + d] = q.x[d][g], before_out[dim * p + d] = q.before[d][g];
        lo_out[dim * p + d] = q.lo[d][g];
      }
      for (int d = 0; d < 2; ++d) point_out[2 * p + d] = q.point[d][g], coords_out[2 * p + d] = q.coords[d][g];
      out_cell->typed_data()[p] = q.cell[g];
      out_status->typed_data()[p] = q.status[g];
      out_stopped->typed_data()[p] = q.stopped[g];
      out_orientation->typed_data()[p] = q.drifting.orientation[g];
    }
  }
  return ffi::Error::Success();
}

}  // namespace

#define FLOWKIT_OCEAN_CHUNK_BINDING ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs()

XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitOceanChunkF32, Chunk<ffi::F32>, FLOWKIT_OCEAN_CHUNK_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitOceanChunkF64, Chunk<ffi::F64>, FLOWKIT_OCEAN_CHUNK_BINDING);

// The declared layout, one entry a line (kernel_seam.h).
extern "C" const char* FlowkitOceanChunkLayout() {
  return FLOWKIT_OCEAN_INPUTS(FLOWKIT_LINE_INPUT) FLOWKIT_OCEAN_RESULTS(FLOWKIT_LINE_RESULT)
      FLOWKIT_OCEAN_ATTRS(FLOWKIT_LINE_ATTR) FLOWKIT_OCEAN_KINDS(FLOWKIT_LINE_KIND)
          FLOWKIT_LINE_CAPACITY("map_columns", FLOWKIT_OCEAN_MAP_COLUMNS)
              FLOWKIT_LINE_CAPACITY("tableau_rows", FLOWKIT_OCEAN_MAX_ROWS) FLOWKIT_DRIFT_LAYOUT;
}
