// The mesh tracker's steps for a block of particles, each particle carried through all the
// steps of a save interval before the next one: its cells stay in the core's cache from stage
// to stage and step to step, which no stage-by-stage pass over the block can do.
//
// The arithmetic is MeshField's (flowkit/fields/mesh.py, cells.py): the same check of a point
// in its hinted cell (Newton warm from the hint's coordinates, the same acceptance test; Newton
// stops once its residual is at rounding level, where the JAX path stops on a small update: the
// coordinates agree to rounding), the same walk across the most violated face, the same shape
// functions and linear interpolation in time, the same Butcher tableau. A step it cannot finish that way (a point the walk does not settle:
// beyond a boundary face, out of walking steps; an end point not finite; a row with no cell) is
// left undone: the row stops there, with the step's index in `resume`, and the compiled JAX step
// takes it from that step on (bin search, walls, statuses).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int32_t kActive = 0;
constexpr int32_t kNotReleased = 1;

enum Kind : int32_t { kTetra = 0, kHexahedron = 1, kWedge = 2, kPyramid = 3 };

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

  int32_t kind(int32_t cell) const { return kind_code[kind_of_cell ? kind_of_cell[cell] : 0]; }
};

template <typename T>
struct Hint {
  int32_t cell;
  T point[3];
  T coords[3];
};

template <typename T>
inline T clip(T v, T lo, T hi) {
  return std::min(std::max(v, lo), hi);
}

template <typename T>
inline void linear(const T* row, const T d[3], T out[3]) {
  for (int i = 0; i < 3; ++i) out[i] = row[3 + 3 * i] * d[0] + row[3 + 3 * i + 1] * d[1] + row[3 + 3 * i + 2] * d[2];
}

template <typename T>
inline void centre_of(int32_t kind, T c[3]) {
  c[0] = kind == kWedge ? T(1) / T(3) : T(0.5);
  c[1] = kind == kWedge ? T(1) / T(3) : T(0.5);
  c[2] = kind == kPyramid ? T(0.2) : T(0.5);
}

// The trilinear box map's hexahedron shape functions at xi (node order of VTK_HEXAHEDRON).
template <typename T>
inline void box_shape(const T xi[3], T n[8]) {
  const T r = xi[0], s = xi[1], t = xi[2];
  const T rm = 1 - r, sm = 1 - s, tm = 1 - t;
  n[0] = rm * sm * tm, n[1] = r * sm * tm, n[2] = r * s * tm, n[3] = rm * s * tm;
  n[4] = rm * sm * t, n[5] = r * sm * t, n[6] = r * s * t, n[7] = rm * s * t;
}

// The box map relative to node 0 as a polynomial, x(xi) - X0 = sum_m A_m mono_m(xi) over the
// monomials r, s, t, rs, rt, st, rst: its residual and Jacobian then cost 21 and 27 products
// (the shape functions' form costs about three times that).
template <typename T>
struct BoxPolynomial {
  T a[7][3];

  explicit BoxPolynomial(const T* rel) {  // rel: nodes 1..7 relative to node 0
    for (int d = 0; d < 3; ++d) {
      const T x1 = rel[d], x2 = rel[3 + d], x3 = rel[6 + d], x4 = rel[9 + d];
      const T x5 = rel[12 + d], x6 = rel[15 + d], x7 = rel[18 + d];
      a[0][d] = x1, a[1][d] = x3, a[2][d] = x4;
      a[3][d] = x2 - x1 - x3, a[4][d] = x5 - x1 - x4, a[5][d] = x7 - x3 - x4;
      a[6][d] = x1 - x2 + x3 + x4 - x5 + x6 - x7;
    }
  }

  void residual(const T xi[3], const T target[3], T out[3]) const {
    const T r = xi[0], s = xi[1], t = xi[2];
    const T rs = r * s, rt = r * t, st = s * t, rst = rs * t;
    for (int d = 0; d < 3; ++d)
      out[d] = a[0][d] * r + a[1][d] * s + a[2][d] * t + a[3][d] * rs + a[4][d] * rt + a[5][d] * st + a[6][d] * rst -
               target[d];
  }

  void jacobian(const T xi[3], T col[3][3]) const {  // col[b][d] = dx_d / dxi_b
    const T r = xi[0], s = xi[1], t = xi[2];
    for (int d = 0; d < 3; ++d) {
      col[0][d] = a[0][d] + a[3][d] * s + a[4][d] * t + a[6][d] * (s * t);
      col[1][d] = a[1][d] + a[3][d] * r + a[5][d] * t + a[6][d] * (r * t);
      col[2][d] = a[2][d] + a[4][d] * r + a[5][d] * s + a[6][d] * (r * s);
    }
  }
};

template <typename T>
inline T largest(const T v[3]) {
  return std::max(std::max(std::abs(v[0]), std::abs(v[1])), std::abs(v[2]));
}

// Newton on the box frame (`cells.newton_coords`'s map and acceptance): xi in, coordinates
// out, and whether the map reproduces x to sqrt(eps) of the cell's size there. Each row stops
// as soon as its residual is at rounding level (16 eps of the cell's size, the containment
// tolerance's scale): from a warm start that is after one iteration, where the update rule of
// the JAX path needs a second one to see its update fall below sqrt(eps).
template <typename T>
inline bool newton(const Mesh<T>& m, const T* frame, const T x[3], T xi[3]) {
  const BoxPolynomial<T> box(frame + 3);
  const T target[3] = {x[0] - frame[0], x[1] - frame[1], x[2] - frame[2]};
  const T size = frame[24];
  const T settled = 16 * std::numeric_limits<T>::epsilon() * size;
  T res[3];
  box.residual(xi, target, res);
  for (int i = 0; i < m.newton_steps && largest(res) > settled; ++i) {
    T col[3][3];
    box.jacobian(xi, col);
    const T* c0 = col[0];
    const T* c1 = col[1];
    const T* c2 = col[2];
    const T k12[3] = {c1[1] * c2[2] - c1[2] * c2[1], c1[2] * c2[0] - c1[0] * c2[2], c1[0] * c2[1] - c1[1] * c2[0]};
    const T det = c0[0] * k12[0] + c0[1] * k12[1] + c0[2] * k12[2];
    const T rc2[3] = {res[1] * c2[2] - res[2] * c2[1], res[2] * c2[0] - res[0] * c2[2], res[0] * c2[1] - res[1] * c2[0]};
    const T c1r[3] = {c1[1] * res[2] - c1[2] * res[1], c1[2] * res[0] - c1[0] * res[2], c1[0] * res[1] - c1[1] * res[0]};
    const T delta[3] = {res[0] * k12[0] + res[1] * k12[1] + res[2] * k12[2], c0[0] * rc2[0] + c0[1] * rc2[1] + c0[2] * rc2[2],
                        c0[0] * c1r[0] + c0[1] * c1r[1] + c0[2] * c1r[2]};
    const T inverse = det == 0 ? T(0) : 1 / det;
    for (int a = 0; a < 3; ++a) xi[a] = clip(xi[a] - delta[a] * inverse, T(-2), T(3));
    box.residual(xi, target, res);
  }
  return largest(res) <= m.small * size;
}

// The largest violation of `xi` in a cell of `kind` and the face it belongs to (the first
// largest, as argmax).
template <typename T>
inline T violation(int32_t kind, const T xi[3], int* face) {
  T v[6];
  int count;
  const T r = xi[0], s = xi[1], t = xi[2];
  if (kind == kTetra) {
    v[0] = -(1 - (r + s + t)), v[1] = -r, v[2] = -s, v[3] = -t, count = 4;
  } else if (kind == kHexahedron) {
    v[0] = -r, v[1] = r - 1, v[2] = -s, v[3] = s - 1, v[4] = -t, v[5] = t - 1, count = 6;
  } else if (kind == kWedge) {
    v[0] = -r, v[1] = -s, v[2] = r + s - 1, v[3] = -t, v[4] = t - 1, count = 5;
  } else {
    const T beyond = t - 1, lift = std::max(beyond, T(0));
    const T tri[4] = {-r + lift, r - 1 + lift, -s + lift, s - 1 + lift};
    for (int i = 0; i < 4; ++i) v[i] = std::max(tri[i], beyond);
    v[4] = -t, count = 5;
  }
  int best = 0;
  for (int i = 1; i < count; ++i)
    if (v[i] > v[best]) best = i;
  *face = best;
  return v[best];
}

// Whether x lies in `cell` (MeshField._check): its coordinates there and the face it lies most
// beyond. `warm`: the hint whose coordinates start Newton when it located a point in this cell.
template <typename T>
inline bool check(const Mesh<T>& m, int32_t cell, const T* row, int32_t kind, const T x[3], const Hint<T>* warm, T xi[3],
                  int* face) {
  bool converged = true;
  if (kind == kTetra) {
    const T d[3] = {x[0] - row[0], x[1] - row[1], x[2] - row[2]};
    linear(row, d, xi);
  } else {
    T start[3];
    if (warm != nullptr && warm->cell == cell && std::isfinite(warm->point[0])) {
      const T d[3] = {x[0] - warm->point[0], x[1] - warm->point[1], x[2] - warm->point[2]};
      linear(row, d, start);
      for (int a = 0; a < 3; ++a) start[a] = warm->coords[a] + start[a];
    } else {
      const T d[3] = {x[0] - row[0], x[1] - row[1], x[2] - row[2]};
      T c[3];
      centre_of(kind, c);
      linear(row, d, start);
      for (int a = 0; a < 3; ++a) start[a] += c[a];
    }
    for (int a = 0; a < 3; ++a) xi[a] = clip(start[a], T(-2), T(3));
    converged = newton(m, row + 12, x, xi);
  }
  return violation(kind, xi, face) <= m.tolerance && converged;
}

constexpr int kMapColumns = 37;  // the widest 3-D cell table row (`locator.affine_maps`)

// A particle's cell as last read from the tables: its table row and kind, and its nodes' values
// in the two time slices around the last time asked for. A particle stays in a cell for several
// stages and steps; these reads then come from here instead of tables larger than the cache.
template <typename T>
struct CellCache {
  int32_t cell = -1, kind = 0, count = 0;
  int64_t slice = -1;
  T row[kMapColumns];
  T now[8][3], later[8][3];
};

// Where `y` lies, from the hint before it (MeshField.locate without its bin search): false when
// the walk does not settle it.
template <typename T>
inline bool locate(const Mesh<T>& m, const T y[3], Hint<T>& hint, const CellCache<T>& cache) {
  if (hint.cell < 0) return false;
  if (y[0] == hint.point[0] && y[1] == hint.point[1] && y[2] == hint.point[2]) return true;
  T xi[3];
  int face;
  int32_t cell = hint.cell;
  const bool cached = cache.cell == cell;
  bool inside = check(m, cell, cached ? cache.row : m.map + cell * m.map_cols, cached ? cache.kind : m.kind(cell), y,
                      &hint, xi, &face);
  for (int s = 0; !inside && s < m.walk_steps; ++s) {
    cell = m.neighbours[cell * m.faces + face];
    if (cell < 0) return false;
    inside = check(m, cell, m.map + cell * m.map_cols, m.kind(cell), y, static_cast<const Hint<T>*>(nullptr), xi, &face);
  }
  if (!inside) return false;
  hint.cell = cell;
  for (int a = 0; a < 3; ++a) hint.point[a] = y[a], hint.coords[a] = xi[a];
  return true;
}

// `cache` holding `cell` and the time slices from `slice` on.
template <typename T>
inline void refill(const Mesh<T>& m, int32_t cell, int64_t slice, CellCache<T>& cache) {
  static constexpr int kNodes[4] = {4, 8, 6, 5};
  if (cache.cell != cell) {
    cache.kind = m.kind(cell);
    cache.count = kNodes[cache.kind];
    std::copy(m.map + cell * m.map_cols, m.map + (cell + 1) * m.map_cols, cache.row);
  }
  const T* now = m.values + slice * m.n_points * 3;
  const T* later = now + m.n_points * 3;
  const int32_t* node = m.nodes + cell * m.node_cols;
  for (int i = 0; i < cache.count; ++i)
    for (int c = 0; c < 3; ++c) {
      cache.now[i][c] = now[int64_t(node[i]) * 3 + c];
      if (m.times != nullptr) cache.later[i][c] = later[int64_t(node[i]) * 3 + c];
    }
  cache.cell = cell, cache.slice = slice;
}

// The velocity at time t of a point located by `hint` (node weights, linear in time).
template <typename T>
inline void velocity(const Mesh<T>& m, T t, const Hint<T>& hint, CellCache<T>& cache, T u[3]) {
  int64_t it = 0;
  T wt = 0;
  if (m.times != nullptr) {
    it = (std::upper_bound(m.times, m.times + m.n_times, t) - m.times) - 1;
    it = std::min<int64_t>(std::max<int64_t>(it, 0), m.n_times - 2);
    wt = clip((t - m.times[it]) / (m.times[it + 1] - m.times[it]), T(0), T(1));
  }
  if (cache.cell != hint.cell || cache.slice != it) refill(m, hint.cell, it, cache);
  const int32_t kind = cache.kind;
  const T r = hint.coords[0], s = hint.coords[1], z = hint.coords[2];
  T w[8];
  if (kind == kTetra) {
    w[0] = 1 - (r + s + z), w[1] = r, w[2] = s, w[3] = z;
  } else if (kind == kHexahedron) {
    box_shape(hint.coords, w);
  } else if (kind == kWedge) {
    const T v = 1 - r - s;
    w[0] = v * (1 - z), w[1] = r * (1 - z), w[2] = s * (1 - z), w[3] = v * z, w[4] = r * z, w[5] = s * z;
  } else {
    const T rm = 1 - r, sm = 1 - s, zm = 1 - z;
    w[0] = rm * sm * zm, w[1] = r * sm * zm, w[2] = r * s * zm, w[3] = rm * s * zm, w[4] = z;
  }
  T u0 = 0, u1 = 0, u2 = 0;
  if (m.times == nullptr) {
    for (int i = 0; i < cache.count; ++i) {
      const T* v = cache.now[i];
      u0 += w[i] * v[0], u1 += w[i] * v[1], u2 += w[i] * v[2];
    }
  } else {
    for (int i = 0; i < cache.count; ++i) {
      const T* v = cache.now[i];
      const T* later = cache.later[i];
      u0 += w[i] * (v[0] + wt * (later[0] - v[0]));
      u1 += w[i] * (v[1] + wt * (later[1] - v[1]));
      u2 += w[i] * (v[2] + wt * (later[2] - v[2]));
    }
  }
  u[0] = u0, u[1] = u1, u[2] = u2;
}

constexpr int kMaxRows = 16;  // tableau rows (stages + the end point)
constexpr int kGroup = 8;     // particles stepped side by side

// One particle through a save's steps: where it is, its hints, its stage derivatives.
template <typename T>
struct Particle {
  T x[3], before[3], y[3];
  T K[kMaxRows][3];
  Hint<T> hint, stage;
  CellCache<T> cache;
  int32_t status, release, resume;
  bool moving;
};

template <ffi::DataType DT>
ffi::Error Chunk(ffi::Buffer<DT> x_in, ffi::Buffer<ffi::S32> status_in, ffi::Buffer<ffi::S32> cell_in,
                 ffi::Buffer<DT> point_in, ffi::Buffer<DT> coords_in, ffi::Buffer<ffi::S32> release_step,
                 ffi::Buffer<DT> step_start, ffi::Buffer<DT> step_length, ffi::Buffer<DT> tableau,
                 ffi::Buffer<DT> affine_map, ffi::Buffer<ffi::S32> nodes, ffi::Buffer<ffi::S32> kind_of_cell,
                 ffi::Buffer<ffi::S32> kind_code, ffi::Buffer<ffi::S32> neighbours, ffi::Buffer<DT> values,
                 ffi::Buffer<DT> times, ffi::ResultBuffer<DT> x_out, ffi::ResultBuffer<ffi::S32> status_out,
                 ffi::ResultBuffer<ffi::S32> cell_out, ffi::ResultBuffer<DT> point_out,
                 ffi::ResultBuffer<DT> coords_out, ffi::ResultBuffer<ffi::S32> resume_out,
                 ffi::ResultBuffer<DT> before_out, int64_t newton_steps, int64_t walk_steps, double tolerance) {
  using T = ffi::NativeType<DT>;
  const int64_t n = status_in.element_count();
  const int64_t steps = step_start.element_count();
  const auto tab_dims = tableau.dimensions();  // (rows, rows + 1): a | c
  const int rows = static_cast<int>(tab_dims[0]);
  if (rows > kMaxRows || rows < 2) return ffi::Error::InvalidArgument("mesh chunk: tableau rows out of range");
  const auto map_dims = affine_map.dimensions();
  if (map_dims[1] < 12 || map_dims[1] > kMapColumns)
    return ffi::Error::InvalidArgument("mesh chunk: a 3-D cell table has 12 to 37 columns");
  const auto node_dims = nodes.dimensions();
  const auto value_dims = values.dimensions();
  Mesh<T> m{affine_map.typed_data(),
            map_dims[1],
            nodes.typed_data(),
            node_dims[1],
            kind_of_cell.element_count() > 0 ? kind_of_cell.typed_data() : nullptr,
            kind_code.typed_data(),
            neighbours.typed_data(),
            neighbours.dimensions()[1],
            values.typed_data(),
            value_dims[1],
            times.element_count() > 0 ? times.typed_data() : nullptr,
            static_cast<int64_t>(times.element_count()),
            static_cast<T>(tolerance),
            std::sqrt(std::numeric_limits<T>::epsilon()),
            static_cast<int>(newton_steps),
            static_cast<int>(walk_steps)};
  const T* tab = tableau.typed_data();
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
  const T* t_start = step_start.typed_data();
  const T* h_step = step_length.typed_data();

  // Particles go through the steps in groups of kGroup, stage by stage across the group: one
  // particle's stages form a chain of dependent latencies (locate, interpolate, next stage
  // point), which the core overlaps only between independent particles.
  for (int64_t first = 0; first < n; first += kGroup) {
    const int g_count = static_cast<int>(std::min<int64_t>(kGroup, n - first));
    Particle<T> group[kGroup];
    for (int g = 0; g < g_count; ++g) {
      const int64_t p = first + g;
      Particle<T>& q = group[g];
      for (int d = 0; d < 3; ++d) {
        q.x[d] = q.before[d] = x_in.typed_data()[3 * p + d];
        q.hint.point[d] = point_in.typed_data()[3 * p + d];
        q.hint.coords[d] = coords_in.typed_data()[3 * p + d];
      }
      q.hint.cell = cell_in.typed_data()[p];
      q.status = status_in.typed_data()[p];
      q.release = release_step.typed_data()[p];
      q.resume = static_cast<int32_t>(steps);
    }
    for (int64_t k = 0; k < steps; ++k) {
      const T h = h_step[k];
      for (int g = 0; g < g_count; ++g) {
        Particle<T>& q = group[g];
        q.moving = q.resume == steps && q.status == kActive && h != 0;
        q.stage = q.hint;
        if (q.resume == steps)
          for (int d = 0; d < 3; ++d) q.before[d] = q.x[d];
      }
      for (int i = 0; i < rows; ++i) {
        for (int g = 0; g < g_count; ++g) {
          Particle<T>& q = group[g];
          if (!q.moving) continue;
          T sum[3] = {0, 0, 0};
          for (int e = 0; e < terms[i]; ++e) {
            const T* K = q.K[term_stage[i][e]];
            const T weight = term_weight[i][e];
            sum[0] += weight * K[0], sum[1] += weight * K[1], sum[2] += weight * K[2];
          }
          for (int d = 0; d < 3; ++d) q.y[d] = q.x[d] + h * sum[d];
          if (!locate(m, q.y, q.stage, q.cache)) {
            q.moving = false, q.resume = static_cast<int32_t>(k);
          } else if (i < stages) {
            velocity(m, t_start[k] + c[i] * h, q.stage, q.cache, q.K[i]);
          }
        }
      }
      for (int g = 0; g < g_count; ++g) {
        Particle<T>& q = group[g];
        if (q.moving) {
          if (std::isfinite(q.y[0]) && std::isfinite(q.y[1]) && std::isfinite(q.y[2])) {
            for (int d = 0; d < 3; ++d) q.x[d] = q.y[d];
            q.hint = q.stage;
          } else {
            q.resume = static_cast<int32_t>(k);
          }
        }
        if (q.resume == steps && q.status == kNotReleased && q.release == k) q.status = kActive;
      }
    }
    for (int g = 0; g < g_count; ++g) {
      const int64_t p = first + g;
      const Particle<T>& q = group[g];
      for (int d = 0; d < 3; ++d) {
        x_out->typed_data()[3 * p + d] = q.x[d];
        point_out->typed_data()[3 * p + d] = q.hint.point[d];
        coords_out->typed_data()[3 * p + d] = q.hint.coords[d];
        before_out->typed_data()[3 * p + d] = q.before[d];
      }
      cell_out->typed_data()[p] = q.hint.cell;
      status_out->typed_data()[p] = q.status;
      resume_out->typed_data()[p] = q.resume;
    }
  }
  return ffi::Error::Success();
}

}  // namespace

// The handler's signature, for element type DT (F32, F64).
#define FLOWKIT_MESH_CHUNK_BINDING(DT) \
  ffi::Ffi::Bind() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::S32>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Arg<ffi::Buffer<ffi::DT>>() \
  .Ret<ffi::Buffer<ffi::DT>>() \
  .Ret<ffi::Buffer<ffi::S32>>() \
  .Ret<ffi::Buffer<ffi::S32>>() \
  .Ret<ffi::Buffer<ffi::DT>>() \
  .Ret<ffi::Buffer<ffi::DT>>() \
  .Ret<ffi::Buffer<ffi::S32>>() \
  .Ret<ffi::Buffer<ffi::DT>>() \
  .Attr<int64_t>("newton_steps") \
  .Attr<int64_t>("walk_steps") \
  .Attr<double>("tolerance")


XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitMeshChunkF32, Chunk<ffi::F32>, FLOWKIT_MESH_CHUNK_BINDING(F32));
XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitMeshChunkF64, Chunk<ffi::F64>, FLOWKIT_MESH_CHUNK_BINDING(F64));
