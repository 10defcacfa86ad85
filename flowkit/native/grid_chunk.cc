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

#include "drift_rules.h"
#include "kernel_seam.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// The kernel's declared layout, in call order (`real`: the positions' precision): Python's
// `flowkit/tracker/grid_kernel.py` declares the same as named tuples and checks them against
// `FlowkitGridChunkLayout()` before it registers the targets.
#define FLOWKIT_GRID_INPUTS(X)                                                                             \
  X(x, real) X(status, s32) X(release, s32) X(step_start, real) X(step_length, real) X(tableau, real)      \
  X(values, real) X(axis_0, real) X(axis_1, real) X(axis_2, real) X(origin, real) X(inv_spacing, real)     \
  X(shape, s32) X(uniform, s32) X(periodic, s32) X(bounds, real) X(times, real) X(land, real) X(box, real) \
  X(remainder, real) X(forcing_0, real) X(forcing_1, real) X(forcing_2, real) X(forcing_axes, real)        \
  X(forcing_times, real) X(forcing_ints, s32) X(forcing_reals, real) X(drift_kinds, s32)                   \
  X(drift_numbers, real) X(orientation, real)
#define FLOWKIT_GRID_RESULTS(X) X(x, real) X(status, s32) X(before, real) X(stopped, s32) X(remainder, real)
#define FLOWKIT_GRID_ATTRS(X)                                                                         \
  X(spherical, int64_t) X(longitude_origin, double) X(active, int64_t) X(not_released, int64_t) \
  X(out_of_domain, int64_t) X(beached, int64_t) X(nonfinite, int64_t)
#define FLOWKIT_GRID_MAX_ROWS 16  // tableau rows (stages + the end point)
#define FLOWKIT_GRID_MAX_FORCINGS 3  // forcing fields: `forcing_0` ... (the values of each, flat)
// The columns of the forcings' rows (one row each): `forcing_ints`, in the positions' precision
// `forcing_reals`; and of the drifts' `drift_kinds` (drift_rules.h's `Drift`).
#define FLOWKIT_GRID_FORCING_INTS(X)                                                                           \
  X(forcing_ints, dim) X(forcing_ints, components) X(forcing_ints, n_0) X(forcing_ints, n_1)                  \
  X(forcing_ints, n_2) X(forcing_ints, uniform_0) X(forcing_ints, uniform_1) X(forcing_ints, uniform_2)       \
  X(forcing_ints, periodic_0) X(forcing_ints, periodic_1) X(forcing_ints, periodic_2) X(forcing_ints, times) \
  X(forcing_ints, axes_start) X(forcing_ints, times_start) X(forcing_ints, wraps)
#define FLOWKIT_GRID_FORCING_REALS(X)                                                                           \
  X(forcing_reals, origin_0) X(forcing_reals, origin_1) X(forcing_reals, origin_2) X(forcing_reals, inv_0)     \
  X(forcing_reals, inv_1) X(forcing_reals, inv_2) X(forcing_reals, lo_0) X(forcing_reals, lo_1)                \
  X(forcing_reals, lo_2) X(forcing_reals, hi_0) X(forcing_reals, hi_1) X(forcing_reals, hi_2)                  \
  X(forcing_reals, offset) X(forcing_reals, longitude_start)
#define FLOWKIT_GRID_DRIFT_KINDS(X) X(drift_kinds, rule) X(drift_kinds, sample) X(drift_kinds, second)

constexpr int kMaxRows = FLOWKIT_GRID_MAX_ROWS;
constexpr int kMaxCorners = 8;
constexpr int kMaxForcings = FLOWKIT_GRID_MAX_FORCINGS;
enum ForcingInt : int { FLOWKIT_GRID_FORCING_INTS(FLOWKIT_COLUMN_INDEX) kForcingInts };
enum ForcingReal : int { FLOWKIT_GRID_FORCING_REALS(FLOWKIT_COLUMN_INDEX) kForcingReals };
enum DriftKind : int { FLOWKIT_GRID_DRIFT_KINDS(FLOWKIT_COLUMN_INDEX) kDriftKinds };

// A grid (the current's, or a forcing's): its values, axes and the rules of each axis.
template <typename T>
struct Grid {
  const T* values;  // (T, n_0, ..., n_{dim-1}, components)
  int components;   // the current's: dim
  int64_t slice;    // values in one time slice
  const T* axis[3];
  int32_t n[3];
  int64_t stride[3];  // nodes from one node to the next along each axis
  bool uniform[3], periodic[3];
  T origin[3], inv[3], lo[3], hi[3];
  const T* times;  // (T,), or null for one slice
  int64_t n_times;
  const T* land;  // (n_0, ..., n_{dim-1}), or null
  const T* box;   // (2, dim): the walls of `fk.Reflective` (lo, hi), or null (`fk.Open`)
  int dim;
  bool spherical;
  T longitude_origin, period;  // on a periodic sphere: where its longitudes start, their period
  // a forcing's: its longitudes wrapped into the 360° from `start`, its time axis `offset` ahead
  bool wraps;
  T start, offset;
};

// Python's status codes.
struct Codes {
  int32_t active, not_released, out_of_domain, beached, nonfinite;
};

// floor(v) lane by lane: through the integers where |v| is below the precision's last
// fractional bit, v itself beyond (already whole) and where it is not a number.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::V vfloor(typename Lanes<T>::V v) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  constexpr T whole = sizeof(T) == 4 ? T(8388608.0f) : T(4503599627370496.0);
  const M small = vabs(v) < whole;
  const V safe = small ? v : V{};
  const V t = __builtin_convertvector(__builtin_convertvector(safe, M), V);
  return small ? (t > safe ? t - 1 : t) : v;
}

// Node indices from whole numbers, kept in [0, top] (a lane not a number at 0), so that no read
// leaves the table whatever a lane holds.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::M vindex(typename Lanes<T>::V v, T top) {
  using V = typename Lanes<T>::V;
  const V above = v >= 0 ? v : V{};
  return __builtin_convertvector(above <= top ? above : V{} + top, typename Lanes<T>::M);
}

// One grid's corners around each lane's point, and their values at one time slice (and the
// next), read again only when a lane's lower corner or the slice changes: on the grids of ocean
// products and winds a particle stays between the same corners for many steps.
template <typename T>
struct Probe {
  int32_t lower[3][kLanes], upper[3][kLanes], node[kLanes];  // the point's corners
  int32_t bracket[3][kLanes];                                 // its interval on a rectilinear axis
  T w[3][kLanes], weight[kMaxCorners][kLanes];                // per axis, per corner
  int32_t cached_node[kLanes], cached_slice[kLanes];
  T value[2][kMaxCorners][3][kLanes];  // [slice][corner][component]

  void reset() {
    for (int g = 0; g < kLanes; ++g) {
      cached_node[g] = -1;
      for (int a = 0; a < 3; ++a) bracket[a][g] = 0;
    }
  }
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
  Probe<T> forcing[kMaxForcings];
  T sampled[kMaxForcings][3][kLanes];  // each forcing at the stage point (its data's units)
  T orientation[kLanes];               // leeway's side (+1 right of downwind, -1 left)
};

// The lanes' corners around their points `y` (GridField._corner_indices) and the weight of
// each corner (`_multilinear`: the product of its axes' weights, in axis order).
template <typename T>
FLOWKIT_HOT void corners(const Grid<T>& f, Probe<T>& q, const T (&y)[3][kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const V zero = V{}, one = zero + 1;
  M node = M{};
  for (int a = 0; a < f.dim; ++a) {
    const T nf = static_cast<T>(f.n[a]);
    if (f.uniform[a]) {
      V s = (load<V>(y[a]) - f.origin[a]) * f.inv[a];
      V w;
      M lower;
      if (f.periodic[a]) {
        s = s - nf * vfloor<T>(s / nf);  // the float-mod wrap into [0, n)
        const V floor = vfloor<T>(s);
        lower = vindex<T>(floor < nf - 1 ? floor : zero + (nf - 1), nf - 1);
        w = s - floor;
      } else {
        const V lowered = vclip(vfloor<T>(s), zero, zero + (nf - 2));
        lower = vindex<T>(lowered, nf - 2);
        w = vclip(s - lowered, zero, one);
      }
      const M upper = f.periodic[a] ? (lower == f.n[a] - 1 ? M{} : lower + 1) : lower + 1;
      store_int<T>(lower, q.lower[a]), store_int<T>(upper, q.upper[a]);
      std::memcpy(q.w[a], &w, sizeof w);
    } else {  // a rectilinear axis: each lane's interval kept where it still holds, else searched
      const T* ax = f.axis[a];
      for (int g = 0; g < kLanes; ++g) {
        const T v = y[a][g];
        int32_t b = q.bracket[a][g];
        if (!(ax[b] <= v && v < ax[b + 1]))
          b = clip<int32_t>(static_cast<int32_t>(std::upper_bound(ax, ax + f.n[a], v) - ax) - 1, 0, f.n[a] - 2);
        q.bracket[a][g] = q.lower[a][g] = b, q.upper[a][g] = b + 1;
        q.w[a][g] = clip((v - ax[b]) / (ax[b + 1] - ax[b]), T(0), T(1));
      }
    }
    node += load_int<T>(q.lower[a]) * static_cast<typename Lanes<T>::I>(f.stride[a]);
  }
  store_int<T>(node, q.node);
  for (int c = 0; c < (1 << f.dim); ++c) {
    V weight{};
    for (int a = 0; a < f.dim; ++a) {
      const V wa = (c >> (f.dim - 1 - a)) & 1 ? load<V>(q.w[a]) : one - load<V>(q.w[a]);
      weight = a == 0 ? wa : weight * wa;
    }
    std::memcpy(q.weight[c], &weight, sizeof weight);
  }
}

// Lane g's corner c as a node of the grid (its axes' lower or upper nodes).
template <typename T>
FLOWKIT_HOT int64_t corner_node(const Grid<T>& f, const Probe<T>& q, int g, int c) {
  int64_t node = 0;
  for (int a = 0; a < f.dim; ++a) node += ((c >> (f.dim - 1 - a)) & 1 ? q.upper[a][g] : q.lower[a][g]) * f.stride[a];
  return node;
}

// Lane g's corners' values at `slice` and the next (a series), read again; where the lane stays
// between the same corners and the series moves on by one slice, the next slice's values become
// the slice's and only the new next one is read.
template <typename T>
__attribute__((noinline)) void read_corners(const Grid<T>& f, Probe<T>& q, int g, int64_t slice) {
  const int components = f.components;
  const bool shifted = f.times != nullptr && q.cached_node[g] == q.node[g] && q.cached_slice[g] + 1 == slice;
  for (int c = 0; c < (1 << f.dim); ++c) {
    const T* at = f.values + slice * f.slice + corner_node(f, q, g, c) * components;
    for (int d = 0; d < components; ++d) {
      q.value[0][c][d][g] = shifted ? q.value[1][c][d][g] : at[d];
      if (f.times != nullptr) q.value[1][c][d][g] = at[f.slice + d];
    }
  }
  q.cached_node[g] = q.node[g], q.cached_slice[g] = static_cast<int32_t>(slice);
}

// The corners a group's moving lanes will read when the series moves on to `slice` (its next
// one), fetched into the cache a step ahead: on a wind's grid of tens of megabytes each lane's
// corners lie in memory, and a slice's change sends every lane there at once.
template <typename T>
void prefetch_corners(const Grid<T>& f, const Probe<T>& q, typename Lanes<T>::M moving, int64_t slice) {
  if (f.times == nullptr || slice + 1 >= f.n_times) return;
  for_each_lane(moving, [&](int g) {
    if (q.cached_slice[g] + 1 != slice || q.cached_node[g] < 0) return;
    for (int c = 0; c < (1 << f.dim); ++c)
      __builtin_prefetch(f.values + (slice + 1) * f.slice + corner_node(f, q, g, c) * f.components);
  });
}

// Lane g's corners' land mask, read again.
template <typename T>
__attribute__((noinline)) void read_land(const Grid<T>& f, Group<T>& q, int g) {
  for (int c = 0; c < (1 << f.dim); ++c) q.land[c][g] = f.land[corner_node(f, q.grid, g, c)];
  q.land_node[g] = q.grid.node[g];
}

// A grid's values at the lanes' points `y`, at time `when`, in its data's units
// (GridField._data_value on an A-grid, multilinear and linear in time).
template <typename T>
FLOWKIT_HOT void interpolate(const Grid<T>& f, Probe<T>& q, const T (&y)[3][kLanes], typename Lanes<T>::M moving,
                             When<T> when, T (&u)[3][kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  using I = typename Lanes<T>::I;
  corners(f, q, y);
  const M stale = moving & ((load_int<T>(q.cached_node) != load_int<T>(q.node)) |
                            (load_int<T>(q.cached_slice) != static_cast<I>(when.slice)));
  for_each_lane(stale, [&](int g) { read_corners(f, q, g, when.slice); });
  const int count = 1 << f.dim;
  for (int d = 0; d < f.components; ++d) {
    V now = load<V>(q.weight[0]) * load<V>(q.value[0][0][d]);
    for (int c = 1; c < count; ++c) now += load<V>(q.weight[c]) * load<V>(q.value[0][c][d]);
    if (f.times != nullptr) {
      V next = load<V>(q.weight[0]) * load<V>(q.value[1][0][d]);
      for (int c = 1; c < count; ++c) next += load<V>(q.weight[c]) * load<V>(q.value[1][c][d]);
      now = (T(1) - when.wt) * now + when.wt * next;
    }
    std::memcpy(u[d], &now, sizeof now);
  }
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

// Forcing j at the lanes' stage points, at time `when` on its axis (fields.forcing.Forcing):
// on its first coordinates, longitudes wrapped into its 360°, zero outside it or where a value
// is not finite.
template <typename T>
FLOWKIT_HOT void sample_forcing(const Grid<T>& f, Group<T>& q, int j, typename Lanes<T>::M moving, When<T> when) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  T y[3][kLanes];
  for (int a = 0; a < f.dim; ++a) std::memcpy(y[a], q.y[a], sizeof y[a]);
  if (f.wraps) {  // start + jnp.mod(lon - start, 360): exact by one turn within a turn of it
    const V shifted = load<V>(y[0]) - f.start;
    const V turned = shifted < 0 ? shifted + 360 : shifted >= 360 ? shifted - 360 : shifted;
    std::memcpy(y[0], &turned, sizeof turned);
    for_each_lane(moving & ~((shifted >= -360) & (shifted < 720)), [&](int g) { y[0][g] = float_mod(shifted[g], T(360)); });
    const V lon = load<V>(y[0]) + f.start;
    std::memcpy(y[0], &lon, sizeof lon);
  }
  T(&out)[3][kLanes] = q.sampled[j];
  interpolate(f, q.forcing[j], y, moving, when, out);
  M inside = moving;
  for (int a = 0; a < f.dim; ++a)
    if (!f.periodic[a]) inside &= (load<V>(y[a]) >= f.lo[a]) & (load<V>(y[a]) <= f.hi[a]);
  for (int c = 0; c < f.components; ++c) inside &= vabs(load<V>(out[c])) <= std::numeric_limits<T>::max();
  for (int c = 0; c < f.components; ++c) {
    const V value = inside ? load<V>(out[c]) : V{};
    std::memcpy(out[c], &value, sizeof value);
  }
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
  int n_forcings, n_drifts;
  const Grid<T>* forcings;
  const When<T>* forcing_when;  // (forcings, steps, rows)
  const Drift<T>* drifts;
};

// The rate of the lanes' positions at stage i of step k: the current's velocity and, where the
// run's particles drift, each drift added in the order of the model's rules (particles.drift).
template <typename T>
FLOWKIT_HOT void stage_rate(const Steps<T>& s, Group<T>& q, int64_t k, int i) {
  using V = typename Lanes<T>::V;
  T(&u)[3][kLanes] = q.K[i];
  const V east_factor = velocity(s.f, q, s.when[k * s.rows + i], u);
  if (s.n_drifts == 0) return;
  const auto moving = load_int<T>(q.moving);
  for (int j = 0; j < s.n_forcings; ++j)
    sample_forcing(s.forcings[j], q, j, moving, s.forcing_when[(j * s.steps + k) * s.rows + i]);
  for (int j = 0; j < s.n_drifts; ++j)
    add_drift<T>(s.drifts[j], q.sampled, q.y, q.orientation, s.f.dim, s.f.spherical, east_factor, u);
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
      for (int j = 0; j < s.n_forcings && s.n_drifts > 0; ++j) {
        const When<T>* w = s.forcing_when + j * s.steps * s.rows;
        if (w[(k + 1) * s.rows + stages - 1].slice != w[k * s.rows + stages - 1].slice)
          prefetch_corners(s.forcings[j], q.forcing[j], moving, w[(k + 1) * s.rows + stages - 1].slice);
      }
    }
    for (int d = 0; d < dim; ++d) std::memcpy(q.end[d], q.y[d], sizeof q.end[d]);
    if (f.spherical) settle(f, q);
    M finite = moving;
    for (int d = 0; d < dim; ++d) finite &= vabs(load<V>(q.y[d])) <= std::numeric_limits<T>::max();
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

// The forcings as their rows and buffers give them (`forcing_ints`, `forcing_reals`, the values
// of each in `forcing_0` ..., the axes and times of all in `forcing_axes`, `forcing_times`), or
// the error that names what does not match.
template <typename T, typename B, typename S>
ffi::Error forcings_of(const S& ints, const B& reals, const B* values, const B& axes, const B& times, int dim,
                       bool spherical, Grid<T>* out, int& count) {
  count = static_cast<int>(ints.element_count() / kForcingInts);
  if (ints.element_count() != count * kForcingInts || reals.element_count() != count * kForcingReals ||
      count > kMaxForcings)
    return ffi::Error::InvalidArgument("grid chunk: forcing_ints and forcing_reals hold one row per forcing, at most 3");
  for (int j = 0; j < count; ++j) {
    const int32_t* row = ints.typed_data() + j * kForcingInts;
    const T* real = reals.typed_data() + j * kForcingReals;
    Grid<T>& f = out[j];
    f = Grid<T>{};
    f.dim = row[k_forcing_ints_dim], f.components = row[k_forcing_ints_components];
    if (f.dim < 1 || f.dim > dim || f.components < 1 || f.components > 3)
      return ffi::Error::InvalidArgument("grid chunk: a forcing of 1 to the positions' axes and 1 to 3 components");
    int64_t nodes = 1, axis_at = row[k_forcing_ints_axes_start];
    for (int a = f.dim - 1; a >= 0; --a) {
      f.n[a] = row[k_forcing_ints_n_0 + a];
      if (f.n[a] < 2) return ffi::Error::InvalidArgument("grid chunk: a forcing's axes hold 2 nodes or more");
      f.stride[a] = nodes, nodes *= f.n[a];
    }
    for (int a = 0; a < f.dim; ++a) {
      if (axis_at + f.n[a] > static_cast<int64_t>(axes.element_count()))
        return ffi::Error::InvalidArgument("grid chunk: a forcing's axes past forcing_axes");
      f.axis[a] = axes.typed_data() + axis_at, axis_at += f.n[a];
      f.uniform[a] = row[k_forcing_ints_uniform_0 + a] != 0, f.periodic[a] = row[k_forcing_ints_periodic_0 + a] != 0;
      f.origin[a] = real[k_forcing_reals_origin_0 + a], f.inv[a] = real[k_forcing_reals_inv_0 + a];
      f.lo[a] = real[k_forcing_reals_lo_0 + a], f.hi[a] = real[k_forcing_reals_hi_0 + a];
    }
    f.n_times = row[k_forcing_ints_times];
    const int64_t slices = f.n_times == 0 ? 1 : f.n_times;
    if (f.n_times == 1 || values[j].element_count() != slices * nodes * f.components ||
        row[k_forcing_ints_times_start] + f.n_times > static_cast<int64_t>(times.element_count()))
      return ffi::Error::InvalidArgument("grid chunk: a forcing's values (T, *shape, components), its times in forcing_times");
    f.values = values[j].typed_data(), f.slice = nodes * f.components;
    f.times = f.n_times > 0 ? times.typed_data() + row[k_forcing_ints_times_start] : nullptr;
    f.wraps = row[k_forcing_ints_wraps] != 0, f.spherical = spherical;
    f.start = real[k_forcing_reals_longitude_start], f.offset = real[k_forcing_reals_offset];
  }
  return ffi::Error::Success();
}

// The drifts as their rows give them, each reading forcings that exist.
template <typename T, typename B, typename S>
ffi::Error drifts_of(const S& kinds, const B& numbers, int forcings, std::vector<Drift<T>>& out) {
  const int64_t count = kinds.element_count() / kDriftKinds;
  if (kinds.element_count() != count * kDriftKinds || numbers.element_count() != count * FLOWKIT_DRIFT_NUMBERS)
    return ffi::Error::InvalidArgument("grid chunk: drift_kinds and drift_numbers hold one row per drift");
  for (int64_t j = 0; j < count; ++j) {
    const int32_t* row = kinds.typed_data() + j * kDriftKinds;
    Drift<T> d{row[k_drift_kinds_rule], row[k_drift_kinds_sample], row[k_drift_kinds_second], {}};
    if (d.sample >= forcings || d.second >= forcings || d.rule < kWindage || d.rule > kRise ||
        (d.sample < 0 && d.rule != kRise))
      return ffi::Error::InvalidArgument("grid chunk: a drift of a known rule reading forcings the call holds");
    for (int i = 0; i < FLOWKIT_DRIFT_NUMBERS; ++i) d.number[i] = numbers.typed_data()[j * FLOWKIT_DRIFT_NUMBERS + i];
    out.push_back(d);
  }
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
  Grid<T> forcings[kMaxForcings];
  int n_forcings = 0;
  const decltype(in_forcing_0) forcing_values[kMaxForcings] = {in_forcing_0, in_forcing_1, in_forcing_2};
  const ffi::Error forcing_error = forcings_of<T>(in_forcing_ints, in_forcing_reals, forcing_values, in_forcing_axes,
                                                  in_forcing_times, dim, f.spherical, forcings, n_forcings);
  if (forcing_error.failure()) return forcing_error;
  std::vector<Drift<T>> drifts;
  const ffi::Error drift_error = drifts_of<T>(in_drift_kinds, in_drift_numbers, n_forcings, drifts);
  if (drift_error.failure()) return drift_error;
  if (!drifts.empty() && in_orientation.element_count() != n)
    return ffi::Error::InvalidArgument("grid chunk: drifting rows each take an orientation");
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
  std::vector<When<T>> forcing_when(n_forcings * steps * rows_);  // each forcing's, on its own time axis
  for (int j = 0; j < n_forcings; ++j)
    for (int64_t k = 0; k < steps; ++k)
      for (int i = 0; i < rows_; ++i)
        forcing_when[(j * steps + k) * rows_ + i] =
            when_at(forcings[j].times, forcings[j].n_times, t_start[k] + c[i] * h_step[k] + forcings[j].offset);
  const Steps<T> all{f,     codes,      rows_,           a,      h_step, when.data(), steps, n_forcings,
                     static_cast<int>(drifts.size()), forcings, forcing_when.data(), drifts.data()};
  const T* orientation = drifts.empty() ? nullptr : in_orientation.typed_data();
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
      q.orientation[g] = orientation != nullptr ? orientation[p] : T(1);
    }
    q.grid.reset();
    for (int j = 0; j < n_forcings; ++j) q.forcing[j].reset();
    for (int64_t k = 0; k < steps; ++k) step_group(all, q, k);
    for (int g = 0; g < count; ++g) {
      const int64_t p = live[first + g];
      for (int d = 0; d < dim; ++d)
        x_out[dim * p + d] = q.x[d][g], before_out[dim * p + d] = q.before[d][g], lo_out[dim * p + d] = q.lo[d][g];
      out_status->typed_data()[p] = q.status[g];
      out_stopped->typed_data()[p] = q.stopped[g];
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
          FLOWKIT_LINE_CAPACITY("forcings", FLOWKIT_GRID_MAX_FORCINGS)
              FLOWKIT_LINE_CAPACITY("drift_numbers", FLOWKIT_DRIFT_NUMBERS) FLOWKIT_GRID_FORCING_INTS(FLOWKIT_LINE_COLUMN)
                  FLOWKIT_GRID_FORCING_REALS(FLOWKIT_LINE_COLUMN) FLOWKIT_GRID_DRIFT_KINDS(FLOWKIT_LINE_COLUMN)
                      FLOWKIT_DRIFT_RULES(FLOWKIT_LINE_DRIFT);
}
