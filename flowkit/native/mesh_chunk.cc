// The mesh tracker's steps for a block of particles, each group of 8 carried through all the
// steps of a save interval before the next group: its cells stay in the core's cache from stage
// to stage and step to step, which no stage-by-stage pass over the block can do. A group's
// arithmetic (stage points, the check of each hinted cell, Newton, the interpolation) runs in
// SIMD vectors across its lanes; walks, bin searches and table reads go lane by lane. Only the
// particles that move in the call take lanes.
//
// The arithmetic is MeshField's (flowkit/fields/mesh.py, cells.py): the same check of a point
// in its hinted cell (Newton warm from the hint's coordinates, the same acceptance test; Newton
// stops once its residual is at rounding level, where the JAX path stops on a small update: the
// coordinates agree to rounding), the same walk across the most violated face, the same search
// of the point's bin, the same shape functions (extrapolated from the last cell checked for a
// stage point outside the mesh) and linear interpolation in time, the same Butcher tableau. A
// step whose end is not finite stops the row (NONFINITE) where the step began, as the JAX step
// stops it. A step whose end lies outside the mesh is finished as the run's boundary
// (`walls`) finishes it: without walls (`fk.Open`) the row stops where the step began
// (OUT_OF_DOMAIN); under `MeshWalls` the face it crossed is looked up in the walls' face table
// (BoundMeshWalls.kernel_faces: each boundary face's centre, outward normal and whether it is a
// wall or open): through an opening it leaves (OUT_OF_DOMAIN); at a wall it stops where its
// step met the wall (`absorb`, `stick`: ABSORBED) or is mirrored (`reflect`) or put just inside
// the wall's plane (`slip`) and located again, up to `max_bounces` times, then kept where its
// step began if still outside, as BoundMeshWalls.apply_batch does. Each stopped row's step is
// returned in `stopped` and the fraction of it done in `fraction`. Under an `InletOutlet`
// (`inlet` not `none`), a row whose step went out through the outlet's plane within its region
// starts again on the inlet in the same step, as BoundInletOutlet.restart starts it: at its
// slot's own origin (`grid`), or drawn over the inlet's simplices (`random`: by area; `flux`:
// by the inflow at their corners) from the same counter-based hash of its key and the step as
// flowkit/boundaries/draws.py; its generation counts the restarts. The kernel finishes every
// step: a moving row without a cell (which seeding rules out) is reported as a fault. The
// status codes come from Python's `flowkit._status.Status` as attributes.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_seam.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The kernel's declared layout, in call order: its input buffers and results by name and element
// type (`real`: the positions' precision; `s32`), its attributes by name and type. The FFI
// binding, the handler's reads and `FlowkitMeshChunkLayout()` are all written from these
// lists; Python's `flowkit/tracker/mesh_kernel.py` declares the same as named tuples and checks them
// against that layout when it registers the targets.
#define FLOWKIT_MESH_INPUTS(X)                                                                           \
  X(x, real) X(status, s32) X(cell, s32) X(point, real) X(coords, real) X(release, s32)                 \
  X(step_start, real) X(step_length, real) X(tableau, real) X(affine_map, real) X(nodes, s32)          \
  X(kind_of_cell, s32) X(kind_code, s32) X(neighbours, s32) X(values, real) X(times, real)              \
  X(bin_origin, real) X(bin_inv_size, real) X(bin_shape, s32) X(bin_start, s32) X(bin_cells, s32)      \
  X(wall_index, s32) X(wall_rows, real) X(face_index, s32) X(face_rows, real) X(nudge, real)                \
  X(generation, s32) X(keys, s32) X(step_index, s32) X(outlet, real) X(origin, real) X(origin_cell, s32)  \
  X(origin_point, real) X(origin_coords, real) X(inlet_vertices, real) X(inlet_simplices, s32)             \
  X(inlet_measure, real) X(inlet_cell, s32) X(inflow, real) X(due, s32) X(slot_kind, s32) X(remainder, real)
#define FLOWKIT_MESH_RESULTS(X)                                                                          \
  X(x, real) X(status, s32) X(cell, s32) X(point, real) X(coords, real) X(before, real) X(stopped, s32) \
  X(fraction, real) X(generation, s32) X(lost, s32) X(remainder, real)
#define FLOWKIT_MESH_ATTRS(X)                                                                            \
  X(newton_steps, int64_t) X(walk_steps, int64_t) X(tolerance, double) X(active, int64_t)               \
  X(not_released, int64_t) X(out_of_domain, int64_t) X(absorbed, int64_t) X(nonfinite, int64_t)         \
  X(wall_face, int64_t) X(walls, int64_t) X(max_bounces, int64_t) X(inlet, int64_t)    \
  X(continuous, int64_t) X(locate, int64_t)

// The kernel's own vocabulary, declared in its layout for Python to read: the 3-D cell kinds it
// steps (name, code, node count: Python checks the counts against its `CellKind` table), and what
// an end outside the mesh meets (`walls`): no walls, or MeshWalls' modes.
#define FLOWKIT_MESH_KINDS(X) X(Tetra, tetra, 0, 4) X(Hexahedron, hexahedron, 1, 8) X(Wedge, wedge, 2, 6) X(Pyramid, pyramid, 3, 5)
#define FLOWKIT_MESH_WALLS(X) X(Open, open, 0) X(Reflect, reflect, 1) X(Slip, slip, 2) X(Absorb, absorb, 3)
#define FLOWKIT_MESH_INLETS(X) X(NoInlet, none, 0) X(Grid, grid, 1) X(Random, random, 2) X(Flux, flux, 3)
#define FLOWKIT_MAP_COLUMNS 37  // the widest 3-D cell table row the kernel holds (`locator.affine_maps`)
#define FLOWKIT_MAX_ROWS 16     // tableau rows (stages + the end point)
#define FLOWKIT_FACE_ROW 7      // a face table row: centre (3), outward unit normal (3), kind of face

enum Kind : int32_t { FLOWKIT_MESH_KINDS(FLOWKIT_AS_ENUM) };
enum Walls : int32_t { FLOWKIT_MESH_WALLS(FLOWKIT_AS_ENUM) };
enum Inlets : int32_t { FLOWKIT_MESH_INLETS(FLOWKIT_AS_ENUM) };
#define FLOWKIT_AS_NODES(Name, name, code, nodes) nodes,
constexpr int kNodes[] = {FLOWKIT_MESH_KINDS(FLOWKIT_AS_NODES)};  // by code
constexpr int kFaceRow = FLOWKIT_FACE_ROW;

// Python's codes, passed as attributes: the statuses (`flowkit._status.Status`) and the face
// table's code of a wall (`flowkit.boundaries.mesh.FaceKind`).
struct Codes {
  int32_t active, not_released, out_of_domain, absorbed, nonfinite, wall_face;
};

template <typename T>
struct Mesh {
  const T* map;  // (C, map_cols): point and inverse linear map, then (curved cells) the box frame
  int64_t map_cols;
  const int32_t* nodes;  // (C, node_cols)
  int64_t node_cols;
  const int32_t* kind_of_cell;  // (C,) index into kind_code, or null for one kind
  const int32_t* kind_code;
  const int32_t* neighbours;  // (C, faces)
  int64_t faces;
  const T* values;  // (n_times or 1, n_points, 3)
  int64_t n_points;
  const T* times;  // (n_times,), or null for a steady field
  int64_t n_times;
  T tolerance;  // containment, parametric units
  T small;      // sqrt(eps): Newton's stop and convergence test
  int newton_steps;
  int walk_steps;
  // the uniform bin grid holding each cell in every bin its bounding box overlaps
  const T* bin_origin;     // (3,)
  const T* bin_inv_size;   // (3,)
  const int32_t* bin_shape;  // (3,)
  const int32_t* bin_start;  // (bins + 1,): bin b's cells are bin_cells[bin_start[b]:bin_start[b + 1]]
  const int32_t* bin_cells;
  // cells beside no-slip walls (`flowkit/fields/near_wall.py`), or null: each cell's row (-1:
  // none) of per-face outward normal, plane offset and the cell's height above it (0: no wall)
  const int32_t* wall_index;
  const T* wall_rows;
  Codes codes;
  // the run's walls (`Walls`), and for MeshWalls each boundary cell's row (-1: none) of per-face
  // `kFaceRow` values, the bounces allowed and the slip's nudge inside the plane
  int32_t walls;
  const int32_t* face_index;
  const T* face_rows;
  int max_bounces;
  T nudge;

  int32_t kind(int32_t cell) const { return kind_code[kind_of_cell ? kind_of_cell[cell] : 0]; }
};

// An InletOutlet's outlet and where it starts rows again (BoundInletOutlet), or `mode` kNoInlet.
template <typename T>
struct Inlet {
  int32_t mode;
  const T* outlet;  // the plane: point (3), outward normal (3), region lo (3) and hi (3), tolerance
  const uint32_t* keys;        // (n, 2): each slot's raw key
  const int32_t* step_index;   // (steps,): the global step of each of the call's steps
  const T* origin;             // (n, 3) `grid`: each slot's origin and its hint
  const int32_t* origin_cell;  // (n,)
  const T* origin_point;       // (n, 3)
  const T* origin_coords;      // (n, 3)
  const T* vertices;           // (V, 3) `random`, `flux`: the simplices covering the inlet
  const int32_t* simplices;    // (S, 3)
  const int32_t* cell;         // (S,): the mesh cell each lies on
  const T* inflow;             // (steps, V) `flux`: max(u · inward, 0) at the vertices at each step's end
  int64_t n_simplices;
  bool continuous;             // a ContinuousInlet: releases (`due`) into free slots; its outlet stops rows
  const int32_t* due;          // (steps,) releases due in each step in this block
  const int32_t* slot_kind;    // (n,): -1 padding, 0 free when not moving, 1 waiting for its release time
  std::vector<T> cdf;          // (1 or steps, S): the simplices' cumulative weights
};

// murmur3's 32-bit finaliser and the inlet's draws, as flowkit/boundaries/draws.py computes them.
constexpr uint32_t kSalt = 0x1B7E7u, kGolden = 0x9E3779B9u;
inline uint32_t mix(uint32_t h) {
  h ^= h >> 16, h *= 0x85EBCA6Bu, h ^= h >> 13, h *= 0xC2B2AE35u;
  return h ^ (h >> 16);
}
template <typename T>
inline T uniform(const uint32_t key[2], uint32_t step, uint32_t j) {
  const uint32_t a = mix(key[0] ^ mix(key[1] ^ mix(step ^ mix(j ^ kSalt))));
  if constexpr (sizeof(T) == 4) return static_cast<T>(a >> 8) * T(1.0 / 16777216.0);
  const uint32_t b = mix(a ^ kGolden);
  return (static_cast<double>(a >> 5) * 67108864.0 + static_cast<double>(b >> 6)) * (1.0 / 9007199254740992.0);
}


// The location's arithmetic is written once for V = T, one lane (the walks and bin searches),
// and for V = Simd<T>::V, a vector of lanes of a group (GCC's vector extensions,
// FLOWKIT_SIMD_BYTES wide: 16, the baseline x86-64 registers (4 floats, 2 doubles), in
// `_mesh_chunk`; 32, AVX2's (8 floats, 4 doubles), in `_mesh_chunk_avx2`, this source built
// again by `mesh_chunk_avx2.cc` with -mavx2 and without FMA, so that both builds round alike).
// M: a lane mask, bool or a vector of -1 or 0.
#ifndef FLOWKIT_SIMD_BYTES
#define FLOWKIT_SIMD_BYTES 16
#endif
constexpr int kBytes = FLOWKIT_SIMD_BYTES;
template <typename T>
struct Simd;
template <>
struct Simd<float> {
  typedef float V __attribute__((vector_size(kBytes)));
  typedef int32_t M __attribute__((vector_size(kBytes)));
  typedef int32_t Kinds __attribute__((vector_size(kBytes)));
};
template <>
struct Simd<double> {
  typedef double V __attribute__((vector_size(kBytes)));
  typedef int64_t M __attribute__((vector_size(kBytes)));
  typedef int32_t Kinds __attribute__((vector_size(kBytes / 2)));
};
template <typename T>
constexpr int kWidth = kBytes / sizeof(T);

template <typename V, typename E>
inline void store(E* lanes, V v) {
  std::memcpy(lanes, &v, sizeof v);
}
template <typename V>
inline V vmin(V a, V b) {  // std::min(a, b)
  return b < a ? b : a;
}
template <typename T, typename V>
inline auto finite(V v) {  // std::isfinite, lane by lane
  return vabs(v) <= std::numeric_limits<T>::max();
}

inline bool negate(bool mask) { return !mask; }
template <typename M>
inline M negate(M mask) {
  return ~mask;
}
template <typename M>
inline M everywhere() {
  return M{} - 1;
}
template <>
inline bool everywhere<bool>() {
  return true;
}

// The violation of each face of the lanes' cells by the coordinates (r, s, t), in the face
// order of the neighbour table (-inf past a kind's faces; `MeshField._check`'s violations), for
// the kinds `is(kind)` picks among the lanes.
template <typename T, typename V, typename Is>
inline void violations(Is is, V r, V s, V t, V v[6]) {
  const V none = V{} - std::numeric_limits<T>::infinity();
  const V tet[6] = {-(1 - (r + s + t)), -r, -s, -t, none, none};
  const V hex[6] = {-r, r - 1, -s, s - 1, -t, t - 1};
  const V wedge[6] = {-r, -s, r + s - 1, -t, t - 1, none};
  const V beyond = t - 1, lift = vmax(beyond, V{});
  const V pyramid[6] = {vmax(-r + lift, beyond), vmax(r - 1 + lift, beyond), vmax(-s + lift, beyond),
                        vmax(s - 1 + lift, beyond), -t, none};
  for (int i = 0; i < 6; ++i)
    v[i] = is(kTetra) ? tet[i] : is(kHexahedron) ? hex[i] : is(kWedge) ? wedge[i] : pyramid[i];
}

// The coordinates `xi` of y in the lanes' cells (`MeshField._coords`), and whether Newton
// converged there. `row(c)`: column c of the lanes' cell table rows; `is(kind)`: the lanes of a
// kind. A box cell's Newton starts, in the lanes `warm`, from the coordinates `coords` of
// `point` (the stage's hint, in the same cell) moved by the cell's linear map, elsewhere from
// the centre; it runs on the box map written as a polynomial, x(xi) - X0 = sum_m A_m mono_m(xi)
// over the monomials r, s, t, rs, rt, st, rst (residual and Jacobian in 21 and 27 products),
// and each lane stops once its residual is at rounding level (16 eps of the cell's size): from
// a warm start after one iteration, where the JAX path's update rule needs a second one to see
// its update fall below sqrt(eps). The acceptance test is the JAX path's.
template <typename T, typename V, typename M, typename Row, typename Is>
inline M coordinates(const Mesh<T>& m, Row row, Is is, const V y[3], M warm, const V point[3], const V coords[3],
                     V xi[3]) {
  auto linear_of = [&](const V d[3], V out[3]) {
    for (int a = 0; a < 3; ++a) out[a] = row(3 + 3 * a) * d[0] + row(4 + 3 * a) * d[1] + row(5 + 3 * a) * d[2];
  };
  const V d[3] = {y[0] - row(0), y[1] - row(1), y[2] - row(2)};
  linear_of(d, xi);
  const M box = negate(is(kTetra));
  if (!any_lane(box)) return everywhere<M>();
  V moved[3] = {};
  if (any_lane(warm)) {
    const V w[3] = {y[0] - point[0], y[1] - point[1], y[2] - point[2]};
    linear_of(w, moved);
  }
  const V half = V{} + T(0.5), third = V{} + T(1) / T(3);
  const V centre[3] = {is(kWedge) ? third : half, is(kWedge) ? third : half, is(kPyramid) ? V{} + T(0.2) : half};
  for (int a = 0; a < 3; ++a) {
    const V start = warm ? coords[a] + moved[a] : xi[a] + centre[a];
    xi[a] = box ? vmin(vmax(start, V{} - 2), V{} + 3) : xi[a];
  }
  V A[7][3], target[3];
  for (int c = 0; c < 3; ++c) {  // row(12..14): node 0; row(15..35): nodes 1..7 relative to it
    const V x1 = row(15 + c), x2 = row(18 + c), x3 = row(21 + c), x4 = row(24 + c);
    const V x5 = row(27 + c), x6 = row(30 + c), x7 = row(33 + c);
    A[0][c] = x1, A[1][c] = x3, A[2][c] = x4;
    A[3][c] = x2 - x1 - x3, A[4][c] = x5 - x1 - x4, A[5][c] = x7 - x3 - x4;
    A[6][c] = x1 - x2 + x3 + x4 - x5 + x6 - x7;
    target[c] = y[c] - row(12 + c);
  }
  const V size = row(36);
  const V settled = size * (16 * std::numeric_limits<T>::epsilon());
  V e[3];
  auto residual = [&]() {
    const V r = xi[0], s = xi[1], t = xi[2];
    const V rs = r * s, rt = r * t, st = s * t, rst = rs * t;
    for (int c = 0; c < 3; ++c)
      e[c] = A[0][c] * r + A[1][c] * s + A[2][c] * t + A[3][c] * rs + A[4][c] * rt + A[5][c] * st + A[6][c] * rst -
             target[c];
  };
  auto largest_e = [&]() { return vmax(vmax(vabs(e[0]), vabs(e[1])), vabs(e[2])); };
  residual();
  M active = box & (largest_e() > settled);
  for (int i = 0; i < m.newton_steps && any_lane(active); ++i) {
    const V r = xi[0], s = xi[1], t = xi[2];
    V c0[3], c1[3], c2[3];  // the Jacobian's columns
    for (int c = 0; c < 3; ++c) {
      c0[c] = A[0][c] + A[3][c] * s + A[4][c] * t + A[6][c] * (s * t);
      c1[c] = A[1][c] + A[3][c] * r + A[5][c] * t + A[6][c] * (r * t);
      c2[c] = A[2][c] + A[4][c] * r + A[5][c] * s + A[6][c] * (r * s);
    }
    const V k12[3] = {c1[1] * c2[2] - c1[2] * c2[1], c1[2] * c2[0] - c1[0] * c2[2], c1[0] * c2[1] - c1[1] * c2[0]};
    const V det = c0[0] * k12[0] + c0[1] * k12[1] + c0[2] * k12[2];
    const V rc2[3] = {e[1] * c2[2] - e[2] * c2[1], e[2] * c2[0] - e[0] * c2[2], e[0] * c2[1] - e[1] * c2[0]};
    const V c1r[3] = {c1[1] * e[2] - c1[2] * e[1], c1[2] * e[0] - c1[0] * e[2], c1[0] * e[1] - c1[1] * e[0]};
    const V delta[3] = {e[0] * k12[0] + e[1] * k12[1] + e[2] * k12[2], c0[0] * rc2[0] + c0[1] * rc2[1] + c0[2] * rc2[2],
                        c0[0] * c1r[0] + c0[1] * c1r[1] + c0[2] * c1r[2]};
    const V inverse = det == 0 ? V{} : 1 / det;
    // settled lanes keep their coordinates (and so recompute the residual they had)
    for (int a = 0; a < 3; ++a) xi[a] = active ? vmin(vmax(xi[a] - delta[a] * inverse, V{} - 2), V{} + 3) : xi[a];
    residual();
    active = active & (largest_e() > settled);
  }
  return negate(box) | (largest_e() <= size * m.small);
}

// The face a point lies most beyond: the first largest violation (as argmax).
template <typename T>
inline int first_largest(const T v[6]) {
  int best = 0;
  for (int i = 1; i < 6; ++i)
    if (v[i] > v[best]) best = i;
  return best;
}

// Whether y lies in `cell` (MeshField._check, Newton from the cell's centre): its coordinates
// there and the face it lies most beyond.
template <typename T>
inline bool check(const Mesh<T>& m, int32_t cell, const T y[3], T xi[3], int* face) {
  const T* row = m.map + cell * m.map_cols;
  const int32_t kind = m.kind(cell);
  auto is = [kind](int32_t k) { return kind == k; };
  const T none[3] = {};
  const bool converged = coordinates<T, T, bool>(m, [row](int c) { return row[c]; }, is, y, false, none, none, xi);
  T v[6];
  violations<T, T>(is, xi[0], xi[1], xi[2], v);
  *face = first_largest(v);
  return v[*face] <= m.tolerance && converged;
}

// The cell of y's bin that holds it (MeshField._walk_and_search's search: the bin's cells in
// order, the first that holds y), for a point the walk did not settle; false if none does (y
// lies outside the mesh).
template <typename T>
inline bool search(const Mesh<T>& m, const T y[3], int32_t* cell, T xi[3]) {
  int64_t bin = 0;
  for (int a = 0; a < 3; ++a) {
    const T s = (y[a] - m.bin_origin[a]) * m.bin_inv_size[a];
    const T shape = static_cast<T>(m.bin_shape[a]);
    if (!(s >= -m.tolerance * shape && s <= shape * (1 + m.tolerance))) return false;  // beyond the grid, or NaN
    bin = bin * m.bin_shape[a] + std::min<int64_t>(std::max<int64_t>(static_cast<int64_t>(std::floor(s)), 0),
                                                   m.bin_shape[a] - 1);
  }
  for (int32_t j = m.bin_start[bin]; j < m.bin_start[bin + 1]; ++j) {
    const int32_t candidate = m.bin_cells[j];
    int face;
    if (check(m, candidate, y, xi, &face)) {
      *cell = candidate;
      return true;
    }
  }
  return false;
}

// The walk from `cell` toward y across the most violated face (`face`, y's coordinates `xi` in
// `cell`), up to `walk_steps` cells, then y's bin (MeshField.locate for a point that left its
// hinted cell): whether y lies in the mesh; `cell`, `xi` its cell and coordinates there, or the
// last cell checked, its coordinates and the face y lies most beyond.
template <typename T>
inline bool walk(const Mesh<T>& m, const T y[3], int32_t* cell, T xi[3], int* face) {
  bool found = false;
  for (int s = 0; !found && s < m.walk_steps; ++s) {
    const int32_t next = m.neighbours[*cell * m.faces + *face];
    if (next < 0) break;
    *cell = next;
    found = check(m, *cell, y, xi, face);
  }
  T binned[3];
  int32_t holder;
  if (!found && search(m, y, &holder, binned)) {
    found = true, *cell = holder;
    for (int a = 0; a < 3; ++a) xi[a] = binned[a];
  }
  return found;
}

constexpr int kMapColumns = FLOWKIT_MAP_COLUMNS;
constexpr int kMaxRows = FLOWKIT_MAX_ROWS;
constexpr int kGroup = 8;        // particles stepped side by side, one SIMD lane each
static_assert(kGroup % kWidth<float> == 0 && kGroup % kWidth<double> == 0, "a group is whole vectors");
constexpr int kMixed = -1;       // a mesh of several kinds: each lane's kind chosen in the arithmetic

// A group of particles through a save's steps, a structure of arrays with one lane per particle,
// so that the arithmetic of a stage (the stage point, the check of its hinted cell, Newton, the
// interpolation) runs across the group in SIMD lanes; only the walks and table reads go lane by lane.
template <typename T>
struct Group {
  T x[3][kGroup], before[3][kGroup], y[3][kGroup];
  T K[kMaxRows][3][kGroup];
  // where x is (the step's hint) and where y is (the stage's)
  int32_t cell[kGroup], stage_cell[kGroup];
  T point[3][kGroup], coords[3][kGroup], stage_point[3][kGroup], stage_coords[3][kGroup];
  int32_t status[kGroup], release[kGroup], resume[kGroup], stopped[kGroup], generation[kGroup];
  T fraction[kGroup];
  bool moving[kGroup], started[kGroup];
  T end[3][kGroup];  // the step's end point as the integrator gave it, before any wall
  int64_t slot[kGroup];
  // each particle's cell as last read from the tables: its table row and kind, and its nodes'
  // values in the two time slices from `cached_slice` on (zero past the kind's node count). A
  // particle stays in a cell for several stages and steps; these reads then come from here
  // instead of tables larger than the cache.
  int32_t cached_cell[kGroup], kind[kGroup];
  int64_t cached_slice[kGroup];
  T row[kMapColumns][kGroup];
  T now[8][3][kGroup], later[8][3][kGroup];
  T lo[3][kGroup], end_lo[3][kGroup];  // what rounding left out of x (Rows.remainder), and of the end
};

// Lane g's cache holding `cell` and the time slices from `slice` on.
template <typename T>
inline void fill(const Mesh<T>& m, Group<T>& q, int g, int32_t cell, int64_t slice) {
  if (q.cached_cell[g] != cell) {
    q.kind[g] = m.kind(cell);
    const T* row = m.map + cell * m.map_cols;
    for (int c = 0; c < m.map_cols; ++c) q.row[c][g] = row[c];
  }
  const int count = kNodes[q.kind[g]];
  const T* now = m.values + slice * m.n_points * 3;
  const T* later = now + m.n_points * 3;
  const int32_t* node = m.nodes + cell * m.node_cols;
  for (int i = 0; i < 8; ++i)
    for (int c = 0; c < 3; ++c) {
      const bool real = i < count;
      q.now[i][c][g] = real ? now[int64_t(node[i]) * 3 + c] : T(0);
      if (m.times != nullptr) q.later[i][c][g] = real ? later[int64_t(node[i]) * 3 + c] : T(0);
    }
  q.cached_cell[g] = cell, q.cached_slice[g] = slice;
}

// The lanes whose kind is `kind`, as a mask of V's width (all or none for a mesh of one kind).
template <typename T, int Kind>
inline typename Simd<T>::M of_kind(const typename Simd<T>::Kinds& kinds, int32_t kind) {
  using M = typename Simd<T>::M;
  if (Kind != kMixed) return M{} - (Kind == kind ? 1 : 0);
  return __builtin_convertvector(kinds == kind, M);
}

// `check_group` of the lanes from `o` on, a vector of them.
template <typename T, int Kind>
inline void check_lanes(const Mesh<T>& m, const Group<T>& q, int o, T xi_out[3][kGroup], bool inside_out[kGroup]) {
  using V = typename Simd<T>::V;
  using M = typename Simd<T>::M;
  const auto kinds = load<typename Simd<T>::Kinds>(q.kind + o);
  auto is = [&kinds](int32_t kind) { return of_kind<T, Kind>(kinds, kind); };
  auto row = [&q, o](int c) { return load<V>(q.row[c] + o); };
  V y[3], point[3], coords[3], xi[3];
  for (int a = 0; a < 3; ++a) {
    y[a] = load<V>(q.y[a] + o), point[a] = load<V>(q.stage_point[a] + o), coords[a] = load<V>(q.stage_coords[a] + o);
  }
  const M warm = finite<T>(point[0]);  // a hint that located a point
  const M converged = coordinates<T, V, M>(m, row, is, y, warm, point, coords, xi);
  V v[6];
  violations<T, V>(is, xi[0], xi[1], xi[2], v);
  V worst = v[0];
  for (int i = 1; i < 6; ++i) worst = vmax(worst, v[i]);
  const M inside = (worst <= m.tolerance) & converged;
  for (int a = 0; a < 3; ++a) store(xi_out[a] + o, xi[a]);
  for (int g = 0; g < kWidth<T>; ++g) inside_out[o + g] = inside[g] != 0;
}

template <typename T, int Kind>
inline void check_group(const Mesh<T>& m, const Group<T>& q, T xi_out[3][kGroup], bool inside_out[kGroup]) {
  for (int o = 0; o < kGroup; o += kWidth<T>) check_lanes<T, Kind>(m, q, o, xi_out, inside_out);
}

// A lane stopped in step k: `code`, its step's fraction done `fraction`, where x now is.
template <typename T>
inline void stop(Group<T>& q, int g, int32_t code, int32_t k, T fraction) {
  q.status[g] = code, q.stopped[g] = k, q.fraction[g] = fraction, q.moving[g] = false;
}

// A lane whose step ends (finite) outside the mesh, its walk stopped in `cell` with its end
// lying most beyond `face` (coordinates `xi`), under the run's walls (`m.walls`), as
// BoundMeshWalls.apply_batch and the JAX step finish it: whether the end is now inside (turned
// back by reflect or slip: q.y, `cell`, `xi` where it is), or the lane stopped.
template <typename T>
inline bool leave_or_turn(const Mesh<T>& m, Group<T>& q, int g, int32_t* cell, int* face, T xi[3], int32_t k) {
  auto wall_row = [&m](int32_t c, int f) -> const T* {  // the face's row if it is a wall, else null
    if (m.face_index == nullptr || c < 0 || m.neighbours[c * m.faces + f] >= 0 || m.face_index[c] < 0) return nullptr;
    const T* row = m.face_rows + (int64_t(m.face_index[c]) * m.faces + f) * kFaceRow;
    return row[6] == m.codes.wall_face ? row : nullptr;
  };
  const T* row = m.walls == kOpen ? nullptr : wall_row(*cell, *face);
  if (row == nullptr) {  // no wall there (an opening, or no walls at all): it leaves
    stop(q, g, m.codes.out_of_domain, k, T(1));
    return false;
  }
  if (m.walls == kAbsorb) {  // stopped where the step's chord meets the wall's plane
    T step[3], along = 0, gap = 0;
    for (int a = 0; a < 3; ++a) {
      step[a] = q.y[a][g] - q.x[a][g];
      along += step[a] * row[3 + a];
      gap += (row[a] - q.x[a][g]) * row[3 + a];
    }
    const T s = clip(gap / (along == 0 ? T(1) : along), T(0), T(1));
    for (int a = 0; a < 3; ++a) q.x[a][g] += s * step[a];
    stop(q, g, m.codes.absorbed, k, s);
    return false;
  }
  T y[3] = {q.y[0][g], q.y[1][g], q.y[2][g]};
  bool escaped = false, found = false;
  for (int i = 0; i < m.max_bounces && !found; ++i) {
    row = i == 0 ? row : wall_row(*cell, *face);
    if (row == nullptr) {
      escaped = true;
      break;
    }
    const T depth = (y[0] - row[0]) * row[3] + (y[1] - row[1]) * row[4] + (y[2] - row[2]) * row[5];
    const T move = m.walls == kReflect ? 2 * depth : depth + m.nudge;
    for (int a = 0; a < 3; ++a) y[a] -= move * row[3 + a];
    found = check(m, *cell, y, xi, face) || walk(m, y, cell, xi, face);
  }
  if (found) {
    for (int a = 0; a < 3; ++a) q.y[a][g] = y[a];
    return true;
  }
  if (escaped)
    stop(q, g, m.codes.out_of_domain, k, T(1));
  else  // still outside after the bounces: kept where the step began, moving on from there
    q.moving[g] = false;
  return false;
}

// Where each moving lane's stage point y lies, from its stage hint (MeshField.locate): the
// hinted cell checked across the group, walks and bin searches lane by lane. A lane whose step
// ends outside the mesh (`end_point`: the tableau's last row) is finished under the run's walls:
// it stops (not finite, leaving, absorbed) or is turned back in. A lane without a cell stops
// moving with `resume` at step k, a fault the handler reports.
template <typename T, int Kind>
inline void locate_group(const Mesh<T>& m, Group<T>& q, int64_t slice, int32_t k, bool end_point) {
  bool need[kGroup], any = false;
  for (int g = 0; g < kGroup; ++g) {
    need[g] = q.moving[g] && !(q.y[0][g] == q.stage_point[0][g] && q.y[1][g] == q.stage_point[1][g] &&
                               q.y[2][g] == q.stage_point[2][g] && q.stage_cell[g] >= 0);
    any |= need[g];
  }
  if (!any) return;
  for (int g = 0; g < kGroup; ++g) {
    if (!need[g]) continue;
    if (q.stage_cell[g] < 0) {
      q.moving[g] = false, q.resume[g] = k, need[g] = false;
    } else if (q.cached_cell[g] != q.stage_cell[g]) {
      fill(m, q, g, q.stage_cell[g], slice);
    }
  }
  T xi[3][kGroup];
  bool inside[kGroup];
  check_group<T, Kind>(m, q, xi, inside);
  for (int g = 0; g < kGroup; ++g) {
    if (!need[g]) continue;
    T lane[3] = {xi[0][g], xi[1][g], xi[2][g]};
    int32_t cell = q.stage_cell[g];  // the last cell checked
    bool found = inside[g];
    int face = 0;
    if (!found) {  // the walk across the most violated face, then the bin, as `locate`
      const T y[3] = {q.y[0][g], q.y[1][g], q.y[2][g]};
      T v[6];
      violations<T, T>([&q, g](int32_t k) { return q.kind[g] == k; }, lane[0], lane[1], lane[2], v);
      face = first_largest(v);
      found = walk(m, y, &cell, lane, &face);
    }
    if (!found && end_point) {  // a step ending outside the mesh
      if (!(finite<T>(q.y[0][g]) && finite<T>(q.y[1][g]) && finite<T>(q.y[2][g]))) {
        stop(q, g, m.codes.nonfinite, k, T(1));  // where the step began, as the JAX step's
        continue;
      }
      if (!leave_or_turn(m, q, g, &cell, &face, lane, k)) continue;
      found = true;  // turned back into the mesh by a wall
    }
    // a stage point outside the mesh keeps the last cell checked and its coordinates there: its
    // velocity is extrapolated from the cell it would leave through, as the JAX step's
    q.stage_cell[g] = cell;
    for (int a = 0; a < 3; ++a) {
      q.stage_point[a][g] = found ? q.y[a][g] : std::numeric_limits<T>::quiet_NaN();
      q.stage_coords[a][g] = lane[a];
    }
  }
}

// Beside a no-slip wall face of a lane's stage cell, the velocity's component along the face's
// normal scaled by the distance inside its plane over the cell's height, clipped to [0, 1].
template <typename T>
inline void near_wall(const Mesh<T>& m, const Group<T>& q, T u[3][kGroup]) {
  for (int g = 0; g < kGroup; ++g) {
    if (!q.moving[g] || q.stage_cell[g] < 0 || m.wall_index[q.stage_cell[g]] < 0) continue;
    const T* row = m.wall_rows + int64_t(m.wall_index[q.stage_cell[g]]) * m.faces * 5;
    for (int f = 0; f < m.faces; ++f, row += 5) {
      if (!(row[4] > 0)) continue;
      const T inside = row[3] - (row[0] * q.y[0][g] + row[1] * q.y[1][g] + row[2] * q.y[2][g]);
      const T drop = (1 - clip(inside / row[4], T(0), T(1))) * (row[0] * u[0][g] + row[1] * u[1][g] + row[2] * u[2][g]);
      for (int c = 0; c < 3; ++c) u[c][g] -= drop * row[c];
    }
  }
}

// Each moving lane's velocity at its stage hint (node weights, linear in time between slices
// `slice` and `slice + 1` with weight `wt`), into `u`.
template <typename T, int Kind>
inline void velocity_group(const Mesh<T>& m, Group<T>& q, int64_t slice, T wt, T u[3][kGroup]) {
  for (int g = 0; g < kGroup; ++g)
    if (q.moving[g] && (q.cached_cell[g] != q.stage_cell[g] || q.cached_slice[g] != slice))
      fill(m, q, g, q.stage_cell[g], slice);
  using V = typename Simd<T>::V;
  constexpr int count = Kind == kTetra ? 4 : Kind == kWedge ? 6 : Kind == kPyramid ? 5 : 8;
  for (int o = 0; o < kGroup; o += kWidth<T>) {
    const auto kinds = load<typename Simd<T>::Kinds>(q.kind + o);
    const V r = load<V>(q.stage_coords[0] + o), s = load<V>(q.stage_coords[1] + o), z = load<V>(q.stage_coords[2] + o);
    const V rm = 1 - r, sm = 1 - s, zm = 1 - z, v = 1 - r - s;
    const V tet[4] = {1 - (r + s + z), r, s, z};
    const V hex[8] = {rm * sm * zm, r * sm * zm, r * s * zm, rm * s * zm, rm * sm * z, r * sm * z, r * s * z, rm * s * z};
    const V wedge[6] = {v * zm, r * zm, s * zm, v * z, r * z, s * z};
    const V pyramid[5] = {rm * sm * zm, r * sm * zm, r * s * zm, rm * s * zm, z};
    V w[count];
    for (int i = 0; i < count; ++i) {
      if (Kind == kTetra) w[i] = tet[i];
      if (Kind == kHexahedron) w[i] = hex[i];
      if (Kind == kWedge) w[i] = wedge[i];
      if (Kind == kPyramid) w[i] = pyramid[i];
      if (Kind == kMixed)
        w[i] = of_kind<T, Kind>(kinds, kTetra)        ? (i < 4 ? tet[i] : V{})
               : of_kind<T, Kind>(kinds, kHexahedron) ? hex[i]
               : of_kind<T, Kind>(kinds, kWedge)      ? (i < 6 ? wedge[i] : V{})
                                                      : (i < 5 ? pyramid[i] : V{});
    }
    V sum[3] = {};
    for (int i = 0; i < count; ++i)
      for (int c = 0; c < 3; ++c) {
        const V now = load<V>(q.now[i][c] + o);
        sum[c] += m.times == nullptr ? w[i] * now : w[i] * (now + wt * (load<V>(q.later[i][c] + o) - now));
      }
    for (int c = 0; c < 3; ++c) store(u[c] + o, sum[c]);
  }
  if (m.wall_index != nullptr) near_wall(m, q, u);
}

// Whether lane g's step, from `before` to its integrator's `end`, went out through the outlet's
// plane within its region (`Plane.crossed`, in double as the plane's own arrays are).
template <typename T>
inline bool crossed(const Inlet<T>& in, const Group<T>& q, int g) {
  const T* o = in.outlet;
  double d0 = 0, d1 = 0;
  for (int a = 0; a < 3; ++a) {
    d0 += (double(q.before[a][g]) - double(o[a])) * double(o[3 + a]);
    d1 += (double(q.end[a][g]) - double(o[a])) * double(o[3 + a]);
  }
  const double tolerance = o[12];
  const double s = clip(d0 / (d0 == d1 ? 1.0 : d0 - d1), 0.0, 1.0);
  bool within = true;
  for (int a = 0; a < 3; ++a) {
    const double hit = double(q.before[a][g]) + s * (double(q.end[a][g]) - double(q.before[a][g]));
    within &= hit >= double(o[6 + a]) - tolerance && hit <= double(o[9 + a]) + tolerance;
  }
  return d1 > 0 && d0 <= tolerance && within;
}

// The simplices' cumulative weights (InletSurface.draw): by area, or by area times the mean
// inflow at their corners at each step's end (`flux`; by area where nothing flows in).
template <typename T>
void weigh(Inlet<T>& in, const T* measure, int64_t steps, int64_t n_vertices) {
  const int64_t S = in.n_simplices, rows = in.mode == kFlux ? steps : 1;
  in.cdf.assign(rows * S, T(0));
  for (int64_t k = 0; k < rows; ++k) {
    T* cdf = in.cdf.data() + k * S;
    T total = 0;
    for (int64_t s = 0; s < S; ++s) {
      T w = measure[s];
      if (in.mode == kFlux) {
        const T* u = in.inflow + k * n_vertices;
        const int32_t* c = in.simplices + 3 * s;
        w = measure[s] * ((u[c[0]] + u[c[1]] + u[c[2]]) / T(3));
      }
      cdf[s] = w, total += w;
    }
    if (in.mode == kFlux && !(total > 0))
      for (int64_t s = 0; s < S; ++s) cdf[s] = measure[s];
    for (int64_t s = 1; s < S; ++s) cdf[s] += cdf[s - 1];
  }
}

// Lane g started again on the inlet at the end of step k, as BoundInletOutlet.restart starts it.
template <typename T>
inline void restart(const Mesh<T>& m, const Inlet<T>& in, Group<T>& q, int g, int64_t k, int64_t n_vertices) {
  const int64_t p = q.slot[g];
  for (int a = 0; a < 3; ++a) q.lo[a][g] = T(0);
  if (in.mode == kGrid) {
    for (int a = 0; a < 3; ++a) {
      q.x[a][g] = in.origin[3 * p + a];
      q.point[a][g] = in.origin_point[3 * p + a], q.coords[a][g] = in.origin_coords[3 * p + a];
    }
    q.cell[g] = in.origin_cell[p];
  } else {
    const uint32_t* key = in.keys + 2 * p;
    const uint32_t step = static_cast<uint32_t>(in.step_index[k]);
    T u[6];
    for (int j = 0; j < 6; ++j) u[j] = uniform<T>(key, step, static_cast<uint32_t>(j));
    const int64_t S = in.n_simplices;
    const T* cdf = in.cdf.data() + (in.mode == kFlux ? k * S : 0);
    const int64_t pick = std::min<int64_t>(std::upper_bound(cdf, cdf + S, u[0] * cdf[S - 1]) - cdf, S - 1);
    const int32_t* corner = in.simplices + 3 * pick;
    T e[3];
    for (int c = 0; c < 3; ++c) e[c] = -std::log1p(-u[2 + c]);
    if (in.mode == kFlux) {  // one more exponential on a corner drawn by its inflow
      const T* speed = in.inflow + k * n_vertices;
      T cumulative[3];
      cumulative[0] = speed[corner[0]];
      for (int c = 1; c < 3; ++c) cumulative[c] = cumulative[c - 1] + speed[corner[c]];
      int chosen = 0;
      for (int c = 0; c < 3; ++c) chosen += cumulative[c] < u[1] * cumulative[2];
      if (cumulative[2] > 0) e[chosen] -= std::log1p(-u[5]);
    }
    const T sum = e[0] + e[1] + e[2];
    for (int a = 0; a < 3; ++a) {
      T x = 0;
      for (int c = 0; c < 3; ++c) x += e[c] / sum * in.vertices[3 * corner[c] + a];
      q.x[a][g] = x;
      q.point[a][g] = std::numeric_limits<T>::quiet_NaN(), q.coords[a][g] = T(0);
    }
    q.cell[g] = in.cell[pick];
  }
  q.status[g] = m.codes.active, q.stopped[g] = -1, q.fraction[g] = T(1), q.generation[g] += 1;
}

// What every group's step reads: the mesh, the inlet, the tableau's rows (each row's nonzero
// stage weights) and the steps' lengths, time slices and weights in time.
template <typename T>
struct Steps {
  const Mesh<T>& m;
  const Inlet<T>& in;
  int64_t steps;
  int rows;
  const int* terms;
  const int (*term_stage)[kMaxRows];
  const T (*term_weight)[kMaxRows];
  const T* h_step;
  const int64_t* slice_of;
  const T* wt_of;
  int64_t n_vertices;
};

// Step k of a group's lanes: the stages, the end located and finished under the walls, then
// the outlet (an InletOutlet's restart, a ContinuousInlet's exit) and the release rule.
template <typename T, int Kind>
void step_group(const Steps<T>& s, Group<T>& q, int64_t k) {
  const Mesh<T>& m = s.m;
  const Inlet<T>& in = s.in;
  const int stages = s.rows - 1;
  const T h = s.h_step[k];
  for (int g = 0; g < kGroup; ++g) {
    const bool going = q.resume[g] == s.steps;
    q.moving[g] = q.started[g] = going && q.status[g] == m.codes.active && h != 0;
    q.stage_cell[g] = q.cell[g];
    for (int d = 0; d < 3; ++d) {
      q.stage_point[d][g] = q.point[d][g], q.stage_coords[d][g] = q.coords[d][g];
      if (going) q.before[d][g] = q.x[d][g];
    }
  }
  bool any_moving = false;
  for (int g = 0; g < kGroup; ++g) any_moving |= q.moving[g];
  for (int i = 0; i < s.rows && any_moving; ++i) {
    for (int d = 0; d < 3; ++d) {
      T sum[kGroup] = {};
      for (int e = 0; e < s.terms[i]; ++e) {
        const T weight = s.term_weight[i][e];
        const T* K = q.K[s.term_stage[i][e]][d];
        for (int g = 0; g < kGroup; ++g) sum[g] += weight * K[g];
      }
      if (i < stages)
        for (int g = 0; g < kGroup; ++g) q.y[d][g] = q.x[d][g] + h * sum[g];
      else
        for (int g = 0; g < kGroup; ++g) compensated_sum(q.x[d][g], h * sum[g], q.lo[d][g], q.y[d][g], q.end_lo[d][g]);
      if (i == stages)
        for (int g = 0; g < kGroup; ++g) q.end[d][g] = q.y[d][g];
    }
    const int64_t slice = s.slice_of[k * s.rows + i];
    locate_group<T, Kind>(m, q, slice, static_cast<int32_t>(k), i == stages);
    if (i < stages) velocity_group<T, Kind>(m, q, slice, s.wt_of[k * s.rows + i], q.K[i]);
  }
  bool moved[kGroup];
  for (int g = 0; g < kGroup; ++g) {
    moved[g] = q.moving[g];
    if (q.moving[g]) {
      if (finite<T>(q.y[0][g]) && finite<T>(q.y[1][g]) && finite<T>(q.y[2][g])) {
        q.cell[g] = q.stage_cell[g];
        for (int d = 0; d < 3; ++d)
          q.x[d][g] = q.y[d][g], q.point[d][g] = q.stage_point[d][g], q.coords[d][g] = q.stage_coords[d][g];
      } else {
        stop(q, g, m.codes.nonfinite, static_cast<int32_t>(k), T(1));
      }
    }
    if (in.outlet != nullptr && q.started[g] && q.resume[g] == s.steps && crossed(in, q, g)) {
      if (in.continuous) {  // out through a ContinuousInlet's outlet: stopped where its step began
        for (int d = 0; d < 3; ++d) q.x[d][g] = q.before[d][g];
        stop(q, g, m.codes.out_of_domain, static_cast<int32_t>(k), T(0));
      } else {
        restart(m, in, q, g, k, s.n_vertices);
      }
    }
    if (q.resume[g] == s.steps && q.status[g] == m.codes.not_released && q.release[g] == k)
      q.status[g] = m.codes.active;
  }
  // what rounding left out of the end where the row took it as it is; 0 where a wall, a stop or
  // a restart set it (Rows.remainder's rule), across the lanes
  for (int d = 0; d < 3; ++d)
    for (int g = 0; g < kGroup; ++g)
      q.lo[d][g] = moved[g] ? (q.x[d][g] == q.end[d][g] ? q.end_lo[d][g] : T(0)) : q.lo[d][g];
}

// A ContinuousInlet's releases due in step k (`due`), in the first free slots of the block in
// slot order, as BoundContinuousInlet.restart takes them: a slot is free when its row is not
// moving and not waiting for its own release time. Returns the releases that found no slot.
template <typename T>
int32_t release(const Mesh<T>& m, const Inlet<T>& in, std::vector<Group<T>>& groups, int64_t lanes, int64_t k,
                int32_t due, int64_t steps, int64_t n_vertices) {
  int32_t free = 0;
  for (int64_t lane = 0; lane < lanes; ++lane) {
    Group<T>& q = groups[lane / kGroup];
    const int g = static_cast<int>(lane % kGroup);
    const int32_t kind = in.slot_kind[q.slot[g]];
    const bool waiting = q.status[g] == m.codes.not_released && kind == 1;
    if (kind < 0 || q.status[g] == m.codes.active || waiting || q.resume[g] != steps) continue;
    if (free++ < due) restart(m, in, q, g, k, n_vertices);
  }
  return std::max(due - free, 0);
}

enum Input : size_t { FLOWKIT_MESH_INPUTS(FLOWKIT_INPUT_INDEX) };
enum Result : size_t { FLOWKIT_MESH_RESULTS(FLOWKIT_RESULT_INDEX) };

// The handler reads its buffers and attributes by their declared names (the lists above).
template <ffi::DataType DT>
ffi::Error Chunk(ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
  FLOWKIT_MESH_INPUTS(FLOWKIT_READ_INPUT)
  FLOWKIT_MESH_RESULTS(FLOWKIT_READ_RESULT)
  FLOWKIT_MESH_ATTRS(FLOWKIT_READ_ATTR)
  using T = ffi::NativeType<DT>;
  const int64_t n = in_status.element_count();
  const int64_t steps = in_step_start.element_count();
  const auto tab_dims = in_tableau.dimensions();  // (rows, rows + 1): a | c
  const int rows = static_cast<int>(tab_dims[0]);
  if (rows > kMaxRows || rows < 2) return ffi::Error::InvalidArgument("mesh chunk: tableau rows out of range");
  const auto map_dims = in_affine_map.dimensions();
  if (map_dims[1] < 12 || map_dims[1] > kMapColumns)
    return ffi::Error::InvalidArgument("mesh chunk: a 3-D cell table has 12 to 37 columns");
  const auto node_dims = in_nodes.dimensions();
  const auto value_dims = in_values.dimensions();
  Mesh<T> m{in_affine_map.typed_data(),
            map_dims[1],
            in_nodes.typed_data(),
            node_dims[1],
            in_kind_of_cell.element_count() > 0 ? in_kind_of_cell.typed_data() : nullptr,
            in_kind_code.typed_data(),
            in_neighbours.typed_data(),
            in_neighbours.dimensions()[1],
            in_values.typed_data(),
            value_dims[1],
            in_times.element_count() > 0 ? in_times.typed_data() : nullptr,
            static_cast<int64_t>(in_times.element_count()),
            static_cast<T>(tolerance),
            std::sqrt(std::numeric_limits<T>::epsilon()),
            static_cast<int>(newton_steps),
            static_cast<int>(walk_steps),
            in_bin_origin.typed_data(),
            in_bin_inv_size.typed_data(),
            in_bin_shape.typed_data(),
            in_bin_start.typed_data(),
            in_bin_cells.typed_data(),
            in_wall_index.element_count() > 0 ? in_wall_index.typed_data() : nullptr,
            in_wall_rows.typed_data(),
            Codes{static_cast<int32_t>(active), static_cast<int32_t>(not_released),
                  static_cast<int32_t>(out_of_domain), static_cast<int32_t>(absorbed), static_cast<int32_t>(nonfinite),
                  static_cast<int32_t>(wall_face)},
            static_cast<int32_t>(walls),
            in_face_index.element_count() > 0 ? in_face_index.typed_data() : nullptr,
            in_face_rows.typed_data(),
            static_cast<int>(max_bounces),
            in_nudge.typed_data()[0]};
  const T* tab = in_tableau.typed_data();
  T a[kMaxRows][kMaxRows], c[kMaxRows];
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < rows; ++j) a[i][j] = tab[i * (rows + 1) + j];
    c[i] = tab[i * (rows + 1) + rows];
  }
  const int stages = rows - 1;
  // each row's nonzero stage weights (RK4: 0, 1, 1, 1 and 4 of them)
  int terms[kMaxRows], term_stage[kMaxRows][kMaxRows];
  T term_weight[kMaxRows][kMaxRows];
  for (int i = 0; i < rows; ++i) {
    terms[i] = 0;
    for (int j = 0; j < std::min(i, stages); ++j)
      if (a[i][j] != 0) term_stage[i][terms[i]] = j, term_weight[i][terms[i]++] = a[i][j];
  }
  const T* t_start = in_step_start.typed_data();
  const T* h_step = in_step_length.typed_data();
  // each row's time slice and weight in time, the same for every particle
  std::vector<int64_t> slice_of(steps * rows, 0);
  std::vector<T> wt_of(steps * rows, T(0));
  for (int64_t k = 0; k < steps; ++k)
    for (int i = 0; i < rows; ++i) {
      const When<T> w = when_at(m.times, m.n_times, t_start[k] + c[i] * h_step[k]);
      slice_of[k * rows + i] = w.slice, wt_of[k * rows + i] = w.wt;
    }
  const T* x0 = in_x.typed_data();
  const T* lo0 = in_remainder.typed_data();
  if (in_remainder.element_count() != 3 * n) return ffi::Error::InvalidArgument("mesh chunk: a remainder per row and coordinate");
  const T* p0 = in_point.typed_data();
  const T* xi0 = in_coords.typed_data();
  const int32_t* status0 = in_status.typed_data();
  const int32_t* release0 = in_release.typed_data();
  out_lost->typed_data()[0] = 0;
  if (locate != 0) {  // the rows' first hints, by their bins alone (MeshField.locate, unhinted): no steps
    for (int64_t p = 0; p < n; ++p) {
      const T y[3] = {x0[3 * p], x0[3 * p + 1], x0[3 * p + 2]};
      int32_t cell = -1;
      T xi[3] = {0, 0, 0};
      const bool found = search(m, y, &cell, xi);
      for (int d = 0; d < 3; ++d) {
        out_x->typed_data()[3 * p + d] = out_before->typed_data()[3 * p + d] = y[d];
        out_remainder->typed_data()[3 * p + d] = T(0);
        out_point->typed_data()[3 * p + d] = found ? y[d] : std::numeric_limits<T>::quiet_NaN();
        out_coords->typed_data()[3 * p + d] = found ? xi[d] : T(0);
      }
      out_cell->typed_data()[p] = found ? cell : -1;
      out_status->typed_data()[p] = status0[p];
      out_generation->typed_data()[p] = in_generation.typed_data()[p];
      out_stopped->typed_data()[p] = -1;
      out_fraction->typed_data()[p] = T(1);
    }
    return ffi::Error::Success();
  }
  const int64_t n_vertices = in_inlet_vertices.element_count() / 3;
  Inlet<T> in{static_cast<int32_t>(inlet),
              in_outlet.element_count() > 0 ? in_outlet.typed_data() : nullptr,
              reinterpret_cast<const uint32_t*>(in_keys.typed_data()),
              in_step_index.typed_data(),
              in_origin.typed_data(),
              in_origin_cell.typed_data(),
              in_origin_point.typed_data(),
              in_origin_coords.typed_data(),
              in_inlet_vertices.typed_data(),
              in_inlet_simplices.typed_data(),
              in_inlet_cell.typed_data(),
              in_inflow.typed_data(),
              static_cast<int64_t>(in_inlet_cell.element_count()),
              continuous != 0,
              in_due.typed_data(),
              in_slot_kind.typed_data(),
              {}};
  if (in_outlet.element_count() != 0 && in_outlet.element_count() != 13)
    return ffi::Error::InvalidArgument("mesh chunk: an outlet's plane has 13 values");
  if (in.mode != kNoInlet && !in.continuous && in.outlet == nullptr)
    return ffi::Error::InvalidArgument("mesh chunk: an InletOutlet needs its outlet's plane");
  if (in.continuous && (in_due.element_count() != steps || in_slot_kind.element_count() != n))
    return ffi::Error::InvalidArgument("mesh chunk: a ContinuousInlet needs its releases due and the slots' kinds");
  if ((in.mode == kRandom || in.mode == kFlux) && in.n_simplices == 0)
    return ffi::Error::InvalidArgument("mesh chunk: a random or flux inlet needs the simplices covering it");
  if (in.mode == kFlux && in_inflow.element_count() != steps * n_vertices)
    return ffi::Error::InvalidArgument("mesh chunk: a flux inlet needs the inflow at its vertices at every step");
  if (in.mode == kRandom || in.mode == kFlux) weigh(in, in_inlet_measure.typed_data(), steps, n_vertices);
  const int32_t one_kind = m.kind_of_cell == nullptr ? m.kind_code[0] : kMixed;
  auto step = one_kind == kTetra        ? step_group<T, kTetra>
              : one_kind == kHexahedron ? step_group<T, kHexahedron>
              : one_kind == kWedge      ? step_group<T, kWedge>
              : one_kind == kPyramid    ? step_group<T, kPyramid>
                                        : step_group<T, kMixed>;
  const Steps<T> all{m, in, steps, rows, terms, term_stage, term_weight, h_step, slice_of.data(), wt_of.data(), n_vertices};

  // Only particles that move in this call take lanes (active, or released in it), or under a
  // ContinuousInlet every slot that is not padding (any may be released into); the others
  // leave as they came, so that a group is not held back by stopped lanes.
  std::vector<int64_t> live;
  live.reserve(n);
  for (int64_t p = 0; p < n; ++p) {
    const bool moves = status0[p] == m.codes.active || (status0[p] == m.codes.not_released && release0[p] >= 0);
    if (moves || (in.continuous && in.slot_kind[p] >= 0)) {
      live.push_back(p);
      continue;
    }
    for (int d = 0; d < 3; ++d) {
      out_x->typed_data()[3 * p + d] = out_before->typed_data()[3 * p + d] = x0[3 * p + d];
      out_remainder->typed_data()[3 * p + d] = lo0[3 * p + d];
      out_point->typed_data()[3 * p + d] = p0[3 * p + d];
      out_coords->typed_data()[3 * p + d] = xi0[3 * p + d];
    }
    out_cell->typed_data()[p] = in_cell.typed_data()[p];
    out_generation->typed_data()[p] = in_generation.typed_data()[p];
    out_status->typed_data()[p] = status0[p];
    out_stopped->typed_data()[p] = -1;
    out_fraction->typed_data()[p] = T(1);
  }
  const int64_t n_live = static_cast<int64_t>(live.size());
  auto load_group = [&](Group<T>& q, int64_t first) {
    const int count = static_cast<int>(std::min<int64_t>(kGroup, n_live - first));
    for (int g = 0; g < kGroup; ++g) {
      const int64_t p = live[first + std::min(g, count - 1)];  // lanes past the end: copies of the last, not written
      for (int d = 0; d < 3; ++d) {
        q.x[d][g] = q.before[d][g] = x0[3 * p + d];
        q.lo[d][g] = lo0[3 * p + d];
        q.point[d][g] = p0[3 * p + d];
        q.coords[d][g] = xi0[3 * p + d];
      }
      q.cell[g] = in_cell.typed_data()[p];
      q.slot[g] = p, q.generation[g] = in_generation.typed_data()[p];
      q.status[g] = status0[p];
      q.release[g] = release0[p];
      q.resume[g] = static_cast<int32_t>(steps);
      q.stopped[g] = -1, q.fraction[g] = T(1);
      q.cached_cell[g] = -1, q.cached_slice[g] = -1;
    }
  };
  auto store_group = [&](const Group<T>& q, int64_t first) -> bool {  // false: a moving lane without a cell
    const int count = static_cast<int>(std::min<int64_t>(kGroup, n_live - first));
    for (int g = 0; g < count; ++g) {
      const int64_t p = live[first + g];
      for (int d = 0; d < 3; ++d) {
        out_x->typed_data()[3 * p + d] = q.x[d][g];
        out_remainder->typed_data()[3 * p + d] = q.lo[d][g];
        out_point->typed_data()[3 * p + d] = q.point[d][g];
        out_coords->typed_data()[3 * p + d] = q.coords[d][g];
        out_before->typed_data()[3 * p + d] = q.before[d][g];
      }
      out_cell->typed_data()[p] = q.cell[g];
      out_generation->typed_data()[p] = q.generation[g];
      out_status->typed_data()[p] = q.status[g];
      out_stopped->typed_data()[p] = q.stopped[g];
      out_fraction->typed_data()[p] = q.fraction[g];
      if (q.resume[g] < steps) return false;  // seeds outside the mesh are stopped at t0: this is a fault
    }
    return true;
  };
  const auto fault = ffi::Error::Internal("mesh chunk: a moving particle without a cell");
  if (!in.continuous) {  // each group through all the steps, its cells in cache throughout
    Group<T> q;
    for (int64_t first = 0; first < n_live; first += kGroup) {
      load_group(q, first);
      for (int64_t k = 0; k < steps; ++k) step(all, q, k);
      if (!store_group(q, first)) return fault;
    }
    return ffi::Error::Success();
  }
  // releases take the block's free slots in order: every group through a step, then the releases
  std::vector<Group<T>> groups((n_live + kGroup - 1) / kGroup);
  for (int64_t first = 0; first < n_live; first += kGroup) load_group(groups[first / kGroup], first);
  for (int64_t k = 0; k < steps; ++k) {
    for (Group<T>& q : groups) step(all, q, k);
    out_lost->typed_data()[0] += release(m, in, groups, n_live, k, in.due[k], steps, n_vertices);
  }
  for (int64_t first = 0; first < n_live; first += kGroup)
    if (!store_group(groups[first / kGroup], first)) return fault;
  return ffi::Error::Success();
}

}  // namespace

// The binding of each precision: every buffer and attribute as the lists above declare it.
#define FLOWKIT_MESH_CHUNK_BINDING ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs()

XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitMeshChunkF32, Chunk<ffi::F32>, FLOWKIT_MESH_CHUNK_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitMeshChunkF64, Chunk<ffi::F64>, FLOWKIT_MESH_CHUNK_BINDING);

// The declared layout, one entry a line (kernel_seam.h).
extern "C" const char* FlowkitMeshChunkLayout() {
  return FLOWKIT_MESH_INPUTS(FLOWKIT_LINE_INPUT) FLOWKIT_MESH_RESULTS(FLOWKIT_LINE_RESULT)
      FLOWKIT_MESH_ATTRS(FLOWKIT_LINE_ATTR) FLOWKIT_MESH_KINDS(FLOWKIT_LINE_KIND) FLOWKIT_MESH_WALLS(FLOWKIT_LINE_WALLS)
          FLOWKIT_MESH_INLETS(FLOWKIT_LINE_INLETS)
          FLOWKIT_LINE_CAPACITY("map_columns", FLOWKIT_MAP_COLUMNS) FLOWKIT_LINE_CAPACITY("tableau_rows", FLOWKIT_MAX_ROWS)
              FLOWKIT_LINE_CAPACITY("face_row", FLOWKIT_FACE_ROW);
}

// The width of this build's vectors in bytes, and whether the CPU runs AVX2 (the wide build) and
// AVX-512's F, VL, DQ and BW (the AVX-512 build; libgcc also asks whether the OS saves its registers).
extern "C" int32_t FlowkitSimdBytes() { return FLOWKIT_SIMD_BYTES; }
extern "C" int32_t FlowkitCpuHasAvx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? 1 : 0;
#else
  return 0;
#endif
}
extern "C" int32_t FlowkitCpuHasAvx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                 __builtin_cpu_supports("avx512bw")
             ? 1
             : 0;
#else
  return 0;
#endif
}

// The cells of each bin of a uniform grid (`flowkit.fields.locator.bin_grid`): every cell c in
// `rows` (ascending) is listed in every bin its box `lo[c]`..`hi[c]` reaches, bins of `size`
// from `origin`, row-major `shape`, the box's end bins clipped to the grid. Called twice: with
// `cells` null it writes each bin's start (`start`, n_bins + 1, zeroed by the caller) and
// returns the entry count; then it fills `cells`, each bin's cells ascending.
extern "C" int64_t FlowkitBinCells(const double* lo, const double* hi, const double* origin, const double* size,
                                   const int32_t* rows, int64_t n_rows, int32_t dim, const int64_t* shape,
                                   int64_t* start, int32_t* cells) {
  const int64_t depth = dim == 3 ? shape[2] : 1;  // a 2-D grid is one bin deep
  const int64_t n_bins = shape[0] * shape[1] * depth;
  std::vector<int64_t> cursor;
  if (cells != nullptr) cursor.assign(start, start + n_bins);
  auto bin = [&](const double* corner, int32_t axis) {
    const double at = std::floor((corner[axis] - origin[axis]) / size[axis]);
    return int32_t(std::min(std::max(at, 0.0), double(shape[axis] - 1)));
  };
  for (int64_t r = 0; r < n_rows; ++r) {
    const double* l = lo + int64_t(rows[r]) * dim;
    const double* h = hi + int64_t(rows[r]) * dim;
    const int32_t z0 = dim == 3 ? bin(l, 2) : 0, z1 = dim == 3 ? bin(h, 2) : 0;
    for (int32_t i = bin(l, 0), i1 = bin(h, 0); i <= i1; ++i)
      for (int32_t j = bin(l, 1), j1 = bin(h, 1); j <= j1; ++j)
        for (int32_t k = z0; k <= z1; ++k) {
          const int64_t b = (i * shape[1] + j) * depth + k;
          if (cells == nullptr)
            ++start[b + 1];
          else
            cells[cursor[b]++] = rows[r];
        }
  }
  if (cells == nullptr)
    for (int64_t b = 0; b < n_bins; ++b) start[b + 1] += start[b];
  return start[n_bins];
}

// Host-side tables of `flowkit.fields.locator`, each the same arithmetic as its NumPy function
// in one pass over the cells (`nodes`: (n_cells, width) node ids, unused slots repeating node 0;
// `points`: (P, dim)).

// `cell_boxes`: each cell's bounding box.
extern "C" void FlowkitCellBoxes(const double* points, const int64_t* nodes, int64_t n_cells, int32_t width,
                                 int32_t dim, double* lo, double* hi) {
  for (int64_t c = 0; c < n_cells; ++c) {
    const int64_t* cell = nodes + c * width;
    for (int32_t a = 0; a < dim; ++a) lo[c * dim + a] = hi[c * dim + a] = points[cell[0] * dim + a];
    for (int32_t k = 1; k < width; ++k)
      for (int32_t a = 0; a < dim; ++a) {
        const double x = points[cell[k] * dim + a];
        lo[c * dim + a] = std::min(lo[c * dim + a], x);
        hi[c * dim + a] = std::max(hi[c * dim + a], x);
      }
  }
}

namespace {
// The edges from node 0 of a simplex (dim + 1 nodes, its first slots) and their determinant,
// with the cofactor rows of the edge matrix (`rows`, dim x dim), as `simplex_maps` has them.
double simplex_frame(const double* points, const int64_t* cell, int32_t dim, double* x0, double* rows) {
  double e[3][3];
  for (int32_t a = 0; a < dim; ++a) x0[a] = points[cell[0] * dim + a];
  for (int32_t k = 0; k < dim; ++k)
    for (int32_t a = 0; a < dim; ++a) e[k][a] = points[cell[k + 1] * dim + a] - x0[a];
  if (dim == 2) {
    rows[0] = e[1][1], rows[1] = -e[1][0], rows[2] = -e[0][1], rows[3] = e[0][0];
    return e[0][0] * e[1][1] - e[0][1] * e[1][0];
  }
  auto cross = [](const double* u, const double* v, double* out) {
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
  };
  cross(e[1], e[2], rows), cross(e[2], e[0], rows + 3), cross(e[0], e[1], rows + 6);
  return e[0][0] * rows[0] + e[0][1] * rows[1] + e[0][2] * rows[2];
}
}  // namespace

// `simplex_maps` of every cell (its first dim + 1 nodes a simplex): node 0, then the inverse of
// the edge matrix row-major (the cofactors over the determinant; zero where it vanishes).
extern "C" void FlowkitSimplexMaps(const double* points, const int64_t* nodes, int64_t n_cells, int32_t width,
                                   int32_t dim, double* maps) {
  const int32_t columns = dim + dim * dim;
  for (int64_t c = 0; c < n_cells; ++c) {
    double* row = maps + c * columns;
    double rows[9];
    const double det = simplex_frame(points, nodes + c * width, dim, row, rows);
    const bool ok = std::abs(det) > 1e-300;
    const double scale = ok ? 1.0 / det : 0.0;
    for (int32_t k = 0; k < dim * dim; ++k) row[dim + k] = rows[k] * scale;
  }
}

// `cell_measures` of cells that are one simplex each: |det| / 2 (triangles) or / 6 (tets).
extern "C" void FlowkitSimplexMeasures(const double* points, const int64_t* nodes, int64_t n_cells, int32_t width,
                                       int32_t dim, double* measure) {
  for (int64_t c = 0; c < n_cells; ++c) {
    double x0[3], rows[9];
    measure[c] = std::abs(simplex_frame(points, nodes + c * width, dim, x0, rows)) / (dim == 2 ? 2.0 : 6.0);
  }
}
