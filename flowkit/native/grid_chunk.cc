// The grid tracker's steps for a block of particles on a structured grid (GridField: CMEMS,
// GLORYS, HYCOM and ERA5 products, z-level models, any A-grid on uniform or rectilinear axes):
// each group of particles (`kLanes`) carried through all the steps of a save interval before the
// next group, so that the grid corners around each particle stay in the group's registers and
// cache from stage to stage and step to step. A group's arithmetic (the stage points, the
// corners and weights, the sums and the metric) runs in vectors across its lanes; the corners'
// values are read lane by lane, only where a lane's lower corner or time slice changed.
//
// The arithmetic is GridField's (flowkit/fields/grid.py): per axis the lower and upper node and
// the upper's weight (`_corner_indices`: uniform axes by arithmetic, periodic ones wrapped by
// the float-mod, the weight clipped to [0, 1] on the others, so that a stage point past the
// edge sees the edge's values; rectilinear axes by binary search), the corners' values summed
// with the products of their weights in `_multilinear`'s order, linear in time between slices
// as `(1 - wt) u0 + wt u1`, and on the sphere turned into degrees per second at the stage
// point's latitude (the cosine kernel_seam.h's `cos_near` turns from the step start's). The
// step's end is summed compensated, settled as `canonical_batch` settles it (a latitude past a
// pole folded back with its longitude turned by 180°, longitudes of a global grid wrapped into
// their one period), mirrored into `fk.Reflective`'s box where that is the boundary, and
// finished as the JAX step finishes it: not finite: NONFINITE; off the grid on a non-periodic
// axis: OUT_OF_DOMAIN; where the land mask interpolates to at least 1/2: BEACHED; each stopped
// where its step began, the stopped rows' steps returned in `stopped`. The status codes come
// from Python's `flowkit._status.Status` as attributes.
//
// Particle models that drift beside the current (`fk.particles.Windage`, `StokesDrift`,
// `Leeway`, alone or combined) add their velocity at each stage (drift_rules.h), from forcing
// fields sampled at the stage point as `fields.forcing.Forcing` samples them: on the first
// coordinates of the forcing's own grid (a GridField's arrays, or a constant as two nodes a
// side), longitudes wrapped into its 360°, at the stage's time on its own time axis (its end
// slices held), in its data's units, zero outside its extent or where a value is not finite.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "grid_probe.h"
#include "kernel_seam.h"
#include "xla/ffi/api/ffi.h"


namespace {

// The kernel's declared layout, in call order (`real`: the positions' precision): Python's
// `flowkit/tracker/grid_kernel.py` declares the same as named tuples and checks them against
// `FlowkitGridChunkLayout()` before it registers the targets.
#define FLOWKIT_GRID_INPUTS(X)                                                                             \
  X(x, real) X(status, s32) X(release, s32) X(step_start, real) X(step_length, real) X(tableau, real)      \
  X(values, real) X(axis_0, real) X(axis_1, real) X(axis_2, real) X(origin, real) X(inv_spacing, real)     \
  X(shape, s32) X(uniform, s32) X(periodic, s32) X(bounds, real) X(times, real) X(land, real) X(box, real) \
  X(remainder, real) X(keys, s32) X(first_step, s32) FLOWKIT_DRIFT_INPUTS(X)
#define FLOWKIT_GRID_RESULTS(X) \
  X(x, real) X(status, s32) X(before, real) X(stopped, s32) X(remainder, real) X(orientation, real)
#define FLOWKIT_GRID_ATTRS(X)                                                                         \
  X(spherical, int64_t) X(longitude_origin, double) X(active, int64_t) X(not_released, int64_t) \
  X(out_of_domain, int64_t) X(beached, int64_t) X(nonfinite, int64_t) X(x64, int64_t) X(jumps_tag, int64_t)
#define FLOWKIT_GRID_MAX_ROWS 16  // tableau rows (stages + the end point)

constexpr int kMaxRows = FLOWKIT_GRID_MAX_ROWS;

// Python's status codes.
struct Codes {
  int32_t active, not_released, out_of_domain, beached, nonfinite;
};

// A group of particles through a save's steps, a structure of arrays with one lane each: the
// current's probe and land mask around each lane's stage point, each forcing's probe and values.
template <typename T>
struct Group {
  int64_t slot[kLanes];
  T x[3][kLanes], before[3][kLanes], y[3][kLanes], K[kMaxRows][3][kLanes];
  T lo[3][kLanes];                      // what rounding left out of x (Rows.remainder)
  T end[3][kLanes], end_lo[3][kLanes];  // the step's end as the stages summed it, and its remainder
  int32_t status[kLanes], release[kLanes], stopped[kLanes], moving[kLanes];
  Probe<T> grid;
  int32_t land_node[kLanes];
  T land[kMaxCorners][kLanes];
  T cos_start[kLanes], sin_start[kLanes];  // on the sphere: cos and sin of the step start's latitude
  Drifting<T> drifting;  // the forcings' probes and values, leeway's side
};

// Lane g's corners' land mask, read again.
template <typename T>
__attribute__((noinline)) void read_land(const Grid<T>& f, Group<T>& q, int g) {
  for (int c = 0; c < (1 << f.dim); ++c) q.land[c][g] = f.land[corner_node(f, q.grid, g, c)];
  q.land_node[g] = q.grid.node[g];
}

// The lanes' velocities at their stage points `y`, at time `when` (GridField.__call__), and on
// the sphere the degrees of longitude a metre at their latitudes (1 elsewhere).
template <typename T>
FLOWKIT_HOT typename Lanes<T>::V velocity(const Grid<T>& f, Group<T>& q, When<T> when, T (&u)[3][kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const M moving = load_int<T>(q.moving);
  interpolate(f, q.grid, q.y, moving, when, u);
  if (!f.spherical) return V{} + 1;
  const V cos_lat = cos_near<T>(load<V>(q.y[1]), load<V>(q.x[1]), load<V>(q.cos_start), load<V>(q.sin_start), moving);
  const V east_factor = static_cast<T>(kDegrees) / (static_cast<T>(kEarthRadius) * cos_lat);
  V east = load<V>(u[0]), north = load<V>(u[1]);
  in_degrees<T>(east_factor, east, north);
  std::memcpy(u[0], &east, sizeof east), std::memcpy(u[1], &north, sizeof north);
  return east_factor;
}

// The lanes' step ends on the sphere settled (GridField.canonical_batch): a latitude past a pole
// folded back, its longitude turned by 180°; a global grid's longitudes into their one period.
template <typename T>
FLOWKIT_HOT void settle(const Grid<T>& f, Group<T>& q) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const V lat = load<V>(q.y[1]);
  const V over = lat > 90 ? 180 - lat : lat < -90 ? -180 - lat : lat;
  V lon = load<V>(q.y[0]);
  lon = over != lat ? lon + 180 : lon;
  if (f.periodic[0]) {  // origin + jnp.mod(lon - origin, period), the remainder taken only where it changes
    T from[kLanes];
    const V shifted = lon - f.longitude_origin;
    std::memcpy(from, &shifted, sizeof shifted);
    const M outside = load_int<T>(q.moving) & ~((shifted >= 0) & (shifted < f.period));
    for_each_lane(outside, [&](int g) { from[g] = float_mod(from[g], f.period); });
    lon = load<V>(from) + f.longitude_origin;
  }
  std::memcpy(q.y[0], &lon, sizeof lon), std::memcpy(q.y[1], &over, sizeof over);
}

// The lanes whose points `y` lie on land: the corners' mask, interpolated, at least 1/2
// (GridField.on_land); none without a mask.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::M lanes_beached(const Grid<T>& f, Group<T>& q, typename Lanes<T>::M lanes) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  if (f.land == nullptr || !any_lane(lanes)) return M{};
  corners(f, q.grid, q.y);
  for_each_lane(lanes & (load_int<T>(q.land_node) != load_int<T>(q.grid.node)), [&](int g) { read_land(f, q, g); });
  V wet = load<V>(q.grid.weight[0]) * load<V>(q.land[0]);
  for (int c = 1; c < (1 << f.dim); ++c) wet += load<V>(q.grid.weight[c]) * load<V>(q.land[c]);
  return lanes & (wet >= T(0.5));
}

// What every group's steps share: the grid, the codes, the tableau and the steps' times, the
// forcings and the drifts.
template <typename T>
struct Steps {
  const Grid<T>& f;
  Codes codes;
  int rows;
  const T (*a)[kMaxRows];
  const T* h_step;
  const When<T>* when;  // (steps, rows)
  int64_t steps;
  const Drifts<T>& drifts;
  const uint32_t* keys;  // each row's raw PRNG key (for jibes)
  int64_t first_step;    // the global index of the call's first step
};

// The rate of the lanes' positions at stage i of step k: the current's velocity and, where the
// run's particles drift, each drift added in the order of the model's rules (particles.drift).
template <typename T>
FLOWKIT_HOT void stage_rate(const Steps<T>& s, Group<T>& q, int64_t k, int i) {
  using V = typename Lanes<T>::V;
  T(&u)[3][kLanes] = q.K[i];
  const V east_factor = velocity(s.f, q, s.when[k * s.rows + i], u);
  add_drifts(s.drifts, q.drifting, q.y, load_int<T>(q.moving), k, i, s.f.dim, s.f.spherical, east_factor, u);
}

// Step k of a group's lanes: the stages, the end settled and finished as the JAX step finishes
// it (tracker/step.py `one_step`), then the release rule.
template <typename T>
__attribute__((noinline)) void step_group(const Steps<T>& s, Group<T>& q, int64_t k) {
  const Grid<T>& f = s.f;
  const Codes& codes = s.codes;
  const int stages = s.rows - 1, dim = f.dim;
  const T h = s.h_step[k];
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  using I = typename Lanes<T>::I;
  const M moving = h != 0 ? M(load_int<T>(q.status) == static_cast<I>(codes.active)) : M{};
  store_int<T>(moving, q.moving);
  if (any_lane(moving)) {
    for (int d = 0; d < dim; ++d) {
      const V before = moving ? load<V>(q.x[d]) : load<V>(q.before[d]);
      std::memcpy(q.before[d], &before, sizeof before);
    }
    if (f.spherical) {
      V cos, sin;
      vcos_sin_latitude<T>(load<V>(q.x[1]) * static_cast<T>(kRadians), cos, sin);
      std::memcpy(q.cos_start, &cos, sizeof cos), std::memcpy(q.sin_start, &sin, sizeof sin);
    }
    for (int i = 0; i < s.rows; ++i) {
      for (int d = 0; d < dim; ++d) {
        V sum{};
        for (int j = 0; j < std::min(i, stages); ++j)
          if (s.a[i][j] != 0) sum += s.a[i][j] * load<V>(q.K[j][d]);
        const V x = load<V>(q.x[d]);
        if (i < stages) {
          const V y = x + h * sum;
          std::memcpy(q.y[d], &y, sizeof y);
        } else {  // the step's end, summed compensated
          V y, left;
          compensated_sum(x, h * sum, load<V>(q.lo[d]), y, left);
          std::memcpy(q.y[d], &y, sizeof y), std::memcpy(q.end_lo[d], &left, sizeof left);
        }
      }
      if (i < stages) stage_rate(s, q, k, i);
    }
    if (k + 1 < s.steps) {
      const int64_t now = s.when[k * s.rows + stages - 1].slice, next = s.when[(k + 1) * s.rows + stages - 1].slice;
      if (next != now) prefetch_corners(f, q.grid, moving, next);
    }
    prefetch_forcings(s.drifts, q.drifting, moving, k);
    for (int d = 0; d < dim; ++d) std::memcpy(q.end[d], q.y[d], sizeof q.end[d]);
    if (f.spherical) settle(f, q);
    M finite = moving;
    for (int d = 0; d < dim; ++d) finite &= vabs(load<V>(q.y[d])) <= std::numeric_limits<T>::max();
    if (s.drifts.jibing != nullptr) jibe_lanes(s.drifts, q.drifting, q.slot, s.keys, s.first_step + k, finite, h);
    if (f.box != nullptr)
      for_each_lane(moving, [&](int g) { box_fold(f.box, dim, q.y, g); });
    M inside = moving;
    for (int d = 0; d < dim; ++d)
      if (!f.periodic[d]) inside &= (load<V>(q.y[d]) >= f.lo[d]) & (load<V>(q.y[d]) <= f.hi[d]);
    const M beached = lanes_beached(f, q, moving & finite & inside);
    const M code = ~finite  ? M{} + static_cast<I>(codes.nonfinite)
                   : ~inside ? M{} + static_cast<I>(codes.out_of_domain)
                   : beached ? M{} + static_cast<I>(codes.beached)
                             : M{} + static_cast<I>(codes.active);
    const M stop = moving & (code != static_cast<I>(codes.active)), keep = moving & ~stop;
    store_int<T>(stop ? code : load_int<T>(q.status), q.status);
    store_int<T>(stop ? M{} + static_cast<I>(k) : load_int<T>(q.stopped), q.stopped);
    for (int d = 0; d < dim; ++d) {
      // what rounding left out of the end where the row took it as it is (0 where settling, a
      // wall or a stop set it; kept where the row did not move): Rows.remainder's rule
      const V y = load<V>(q.y[d]), lo = load<V>(q.lo[d]);
      const V left = y == load<V>(q.end[d]) ? load<V>(q.end_lo[d]) : V{};
      const V next = keep ? left : moving ? V{} : lo, x = keep ? y : load<V>(q.x[d]);
      std::memcpy(q.lo[d], &next, sizeof next), std::memcpy(q.x[d], &x, sizeof x);
    }
  }
  const M status = load_int<T>(q.status);
  const M released = (status == static_cast<I>(codes.not_released)) & (load_int<T>(q.release) == static_cast<I>(k));
  store_int<T>(released ? M{} + static_cast<I>(codes.active) : status, q.status);
}

enum Input : size_t { FLOWKIT_GRID_INPUTS(FLOWKIT_INPUT_INDEX) };
enum Result : size_t { FLOWKIT_GRID_RESULTS(FLOWKIT_RESULT_INDEX) };

// The grid as the buffers hold it, or the error that names what does not match.
template <typename T, typename B, typename S>
ffi::Error grid_of(const B& values, const B* axes, const B& origin, const B& inv, const S& shape, const S& uniform,
                   const S& periodic, const B& bounds, const B& times, const B& land, const B& box, int dim,
                   Grid<T>& f) {
  if (shape.element_count() != dim || uniform.element_count() != dim || periodic.element_count() != dim ||
      origin.element_count() != dim || inv.element_count() != dim || bounds.element_count() != 2 * dim)
    return ffi::Error::InvalidArgument("grid chunk: shape, uniform, periodic, origin, inv_spacing per axis, bounds (2, dim)");
  int64_t nodes = 1;
  for (int a = dim - 1; a >= 0; --a) {
    f.n[a] = shape.typed_data()[a];
    if (f.n[a] < 2 || axes[a].element_count() != f.n[a])
      return ffi::Error::InvalidArgument("grid chunk: each axis holds its shape's nodes, at least 2");
    f.stride[a] = nodes, nodes *= f.n[a];
    f.axis[a] = axes[a].typed_data(), f.uniform[a] = uniform.typed_data()[a] != 0;
    f.periodic[a] = periodic.typed_data()[a] != 0;
    f.origin[a] = origin.typed_data()[a], f.inv[a] = inv.typed_data()[a];
    f.lo[a] = bounds.typed_data()[a], f.hi[a] = bounds.typed_data()[dim + a];
  }
  if (nodes > std::numeric_limits<int32_t>::max())
    return ffi::Error::InvalidArgument("grid chunk: a grid of at most 2^31 - 1 nodes");
  f.n_times = static_cast<int64_t>(times.element_count());
  const int64_t slices = f.n_times == 0 ? 1 : f.n_times;
  if (f.n_times == 1 || values.element_count() != slices * nodes * dim)
    return ffi::Error::InvalidArgument("grid chunk: values (T, *shape, dim) with one time per slice (2 or more), or one slice");
  if ((land.element_count() != 0 && land.element_count() != nodes) || (box.element_count() != 0 && box.element_count() != 2 * dim))
    return ffi::Error::InvalidArgument("grid chunk: land holds one value per node, a box its lo and hi");
  f.values = values.typed_data(), f.components = dim, f.slice = nodes * dim, f.dim = dim;
  f.times = f.n_times > 0 ? times.typed_data() : nullptr;
  f.land = land.element_count() > 0 ? land.typed_data() : nullptr;
  f.box = box.element_count() > 0 ? box.typed_data() : nullptr;
  f.period = f.hi[0] - f.lo[0];
  return ffi::Error::Success();
}

template <ffi::DataType DT>
ffi::Error Chunk(ffi::RemainingArgs args, ffi::RemainingRets rets, ffi::Dictionary attrs) {
  FLOWKIT_GRID_INPUTS(FLOWKIT_READ_INPUT)
  FLOWKIT_GRID_RESULTS(FLOWKIT_READ_RESULT)
  FLOWKIT_GRID_ATTRS(FLOWKIT_READ_ATTR)
  using T = ffi::NativeType<DT>;
  const int64_t n = in_status.element_count();
  const int dim = static_cast<int>(in_x.dimensions()[1]);
  const int64_t steps = in_step_start.element_count();
  const int rows_ = static_cast<int>(in_tableau.dimensions()[0]);
  if (rows_ > kMaxRows || rows_ < 2) return ffi::Error::InvalidArgument("grid chunk: tableau rows out of range");
  if (dim != 2 && dim != 3) return ffi::Error::InvalidArgument("grid chunk: positions have 2 or 3 coordinates");
  if (in_remainder.element_count() != n * dim || in_release.element_count() != n)
    return ffi::Error::InvalidArgument("grid chunk: a remainder per row and coordinate, a release per row");
  Grid<T> f{};
  const decltype(in_axis_0) axes[3] = {in_axis_0, in_axis_1, in_axis_2};
  const ffi::Error error = grid_of<T>(in_values, axes, in_origin, in_inv_spacing, in_shape, in_uniform, in_periodic,
                                      in_bounds, in_times, in_land, in_box, dim, f);
  if (error.failure()) return error;
  f.spherical = spherical != 0, f.longitude_origin = static_cast<T>(longitude_origin);
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
  std::vector<When<T>> when(steps * rows_);  // each row's time slice and weight, the same for every particle
  for (int64_t k = 0; k < steps; ++k)
    for (int i = 0; i < rows_; ++i) when[k * rows_ + i] = when_at(f.times, f.n_times, t_start[k] + c[i] * h_step[k]);
  Drifts<T> drifts;
  const decltype(in_forcing_0) forcing_values[kMaxForcings] = {in_forcing_0, in_forcing_1, in_forcing_2};
  const ffi::Error drift_error =
      drifts_from<T>(forcing_values, in_forcing_axes, in_forcing_times, in_forcing_ints, in_forcing_reals, in_drift_kinds,
                     in_drift_numbers, in_orientation, in_coefficients, n, dim, f.spherical, t_start, h_step, c,
                     steps, rows_, drifts);
  if (drift_error.failure()) return drift_error;
  if (drifts.jibing != nullptr && (in_keys.element_count() != 2 * n || in_first_step.element_count() != 1))
    return ffi::Error::InvalidArgument("grid chunk: jibing rows each take a key pair, the call its first step");
  drifts.x64 = x64 != 0, drifts.jumps_tag = static_cast<uint32_t>(jumps_tag);
  const uint32_t* keys = reinterpret_cast<const uint32_t*>(in_keys.typed_data());
  const int64_t first_step = in_first_step.element_count() > 0 ? in_first_step.typed_data()[0] : 0;
  const Steps<T> all{f, codes, rows_, a, h_step, when.data(), steps, drifts, keys, first_step};
  const T* x0 = in_x.typed_data();
  const T* lo0 = in_remainder.typed_data();
  const int32_t* status0 = in_status.typed_data();
  const int32_t* release0 = in_release.typed_data();
  T* x_out = out_x->typed_data();
  T* before_out = out_before->typed_data();
  T* lo_out = out_remainder->typed_data();
  // Only particles that move in this call take lanes (active, or released in it); the others
  // leave as they came.
  std::vector<int64_t> live;
  live.reserve(n);
  for (int64_t p = 0; p < n; ++p) {
    if (status0[p] == codes.active || (status0[p] == codes.not_released && release0[p] >= 0)) {
      live.push_back(p);
      continue;
    }
    for (int d = 0; d < dim; ++d)
      x_out[dim * p + d] = before_out[dim * p + d] = x0[dim * p + d], lo_out[dim * p + d] = lo0[dim * p + d];
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
      q.status[g] = status0[p], q.release[g] = release0[p], q.slot[g] = p, q.stopped[g] = -1;
      q.land_node[g] = -1;
      drifts.load_lane(q.drifting, g, p);
    }
    q.grid.reset();
    q.drifting.reset();
    for (int64_t k = 0; k < steps; ++k) step_group(all, q, k);
    for (int g = 0; g < count; ++g) {
      const int64_t p = live[first + g];
      for (int d = 0; d < dim; ++d)
        x_out[dim * p + d] = q.x[d][g], before_out[dim * p + d] = q.before[d][g], lo_out[dim * p + d] = q.lo[d][g];
      out_status->typed_data()[p] = q.status[g];
      out_stopped->typed_data()[p] = q.stopped[g];
      out_orientation->typed_data()[p] = q.drifting.orientation[g];
    }
  }
  return ffi::Error::Success();
}

}  // namespace

#define FLOWKIT_GRID_CHUNK_BINDING ffi::Ffi::Bind().RemainingArgs().RemainingRets().Attrs()

XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitGridChunkF32, Chunk<ffi::F32>, FLOWKIT_GRID_CHUNK_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(FlowkitGridChunkF64, Chunk<ffi::F64>, FLOWKIT_GRID_CHUNK_BINDING);

// The declared layout, one entry a line (kernel_seam.h).
extern "C" const char* FlowkitGridChunkLayout() {
  return FLOWKIT_GRID_INPUTS(FLOWKIT_LINE_INPUT) FLOWKIT_GRID_RESULTS(FLOWKIT_LINE_RESULT)
      FLOWKIT_GRID_ATTRS(FLOWKIT_LINE_ATTR) FLOWKIT_LINE_CAPACITY("tableau_rows", FLOWKIT_GRID_MAX_ROWS)
          FLOWKIT_DRIFT_LAYOUT;
}
