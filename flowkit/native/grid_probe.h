// Grids probed lane by lane, as the grid kernel reads its current and both ocean kernels read
// the forcings their drifting particles sample (fields/grid.py, fields/forcing.py): a grid's
// corners around each lane's point, their values kept while the lane stays between them, and
// multilinear interpolation, linear in time; the forcings' and drifts' buffers, declared once
// here for every kernel that reads them, and what every group's steps share of them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "drift_rules.h"
#include "kernel_seam.h"
#include "xla/ffi/api/ffi.h"

#define FLOWKIT_MAX_FORCINGS 3  // forcing fields: `forcing_0` ... (the values of each, flat)
// The columns of the forcings' rows (one row each): `forcing_ints`, in the positions' precision
// `forcing_reals`; and of the drifts' `drift_kinds` (drift_rules.h's `Drift`).
#define FLOWKIT_FORCING_INTS(X)                                                                           \
  X(forcing_ints, dim) X(forcing_ints, components) X(forcing_ints, n_0) X(forcing_ints, n_1)                  \
  X(forcing_ints, n_2) X(forcing_ints, uniform_0) X(forcing_ints, uniform_1) X(forcing_ints, uniform_2)       \
  X(forcing_ints, periodic_0) X(forcing_ints, periodic_1) X(forcing_ints, periodic_2) X(forcing_ints, times) \
  X(forcing_ints, axes_start) X(forcing_ints, times_start) X(forcing_ints, wraps)
#define FLOWKIT_FORCING_REALS(X)                                                                           \
  X(forcing_reals, origin_0) X(forcing_reals, origin_1) X(forcing_reals, origin_2) X(forcing_reals, inv_0)     \
  X(forcing_reals, inv_1) X(forcing_reals, inv_2) X(forcing_reals, lo_0) X(forcing_reals, lo_1)                \
  X(forcing_reals, lo_2) X(forcing_reals, hi_0) X(forcing_reals, hi_1) X(forcing_reals, hi_2)                  \
  X(forcing_reals, offset) X(forcing_reals, longitude_start)
#define FLOWKIT_DRIFT_KINDS(X) X(drift_kinds, rule) X(drift_kinds, sample) X(drift_kinds, second)
// The inputs of a kernel's drifting particles, in call order (after its own).
#define FLOWKIT_DRIFT_INPUTS(X)                                                                           \
  X(forcing_0, real) X(forcing_1, real) X(forcing_2, real) X(forcing_axes, real) X(forcing_times, real) \
  X(forcing_ints, s32) X(forcing_reals, real) X(drift_kinds, s32) X(drift_numbers, real) X(orientation, real) \
  X(coefficients, real)
// The layout's lines of the drifts' tables (kernel_seam.h).
#define FLOWKIT_DRIFT_LAYOUT                                                                                      \
  FLOWKIT_LINE_CAPACITY("forcings", FLOWKIT_MAX_FORCINGS)                                                        \
  FLOWKIT_LINE_CAPACITY("drift_numbers", FLOWKIT_DRIFT_NUMBERS)                                                 \
  FLOWKIT_LINE_CAPACITY("leeway_coefficients", FLOWKIT_LEEWAY_COEFFICIENTS) FLOWKIT_FORCING_INTS(FLOWKIT_LINE_COLUMN) \
  FLOWKIT_FORCING_REALS(FLOWKIT_LINE_COLUMN) FLOWKIT_DRIFT_KINDS(FLOWKIT_LINE_COLUMN) FLOWKIT_DRIFT_RULES(FLOWKIT_LINE_DRIFT)

namespace ffi = xla::ffi;

namespace {

constexpr int kMaxCorners = 8;
constexpr int kMaxForcings = FLOWKIT_MAX_FORCINGS;
enum ForcingInt : int { FLOWKIT_FORCING_INTS(FLOWKIT_COLUMN_INDEX) kForcingInts };
enum ForcingReal : int { FLOWKIT_FORCING_REALS(FLOWKIT_COLUMN_INDEX) kForcingReals };
enum DriftKind : int { FLOWKIT_DRIFT_KINDS(FLOWKIT_COLUMN_INDEX) kDriftKinds };

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

// A forcing at the lanes' stage points `at`, into `out`, at time `when` on its axis (fields.forcing.Forcing):
// on its first coordinates, longitudes wrapped into its 360°, zero outside it or where a value
// is not finite.
template <typename T>
FLOWKIT_HOT void sample_forcing(const Grid<T>& f, Probe<T>& probe, const T (&at)[3][kLanes], typename Lanes<T>::M moving,
                                When<T> when, T (&out)[3][kLanes]) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  T y[3][kLanes];
  for (int a = 0; a < f.dim; ++a) std::memcpy(y[a], at[a], sizeof y[a]);
  if (f.wraps) {  // start + jnp.mod(lon - start, 360): exact by one turn within a turn of it
    const V shifted = load<V>(y[0]) - f.start;
    const V turned = shifted < 0 ? shifted + 360 : shifted >= 360 ? shifted - 360 : shifted;
    std::memcpy(y[0], &turned, sizeof turned);
    for_each_lane(moving & ~((shifted >= -360) & (shifted < 720)), [&](int g) { y[0][g] = float_mod(shifted[g], T(360)); });
    const V lon = load<V>(y[0]) + f.start;
    std::memcpy(y[0], &lon, sizeof lon);
  }
  interpolate(f, probe, y, moving, when, out);
  M inside = moving;
  for (int a = 0; a < f.dim; ++a)
    if (!f.periodic[a]) inside &= (load<V>(y[a]) >= f.lo[a]) & (load<V>(y[a]) <= f.hi[a]);
  for (int c = 0; c < f.components; ++c) inside &= vabs(load<V>(out[c])) <= std::numeric_limits<T>::max();
  for (int c = 0; c < f.components; ++c) {
    const V value = inside ? load<V>(out[c]) : V{};
    std::memcpy(out[c], &value, sizeof value);
  }
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
    return ffi::Error::InvalidArgument("chunk: forcing_ints and forcing_reals hold one row per forcing, at most 3");
  for (int j = 0; j < count; ++j) {
    const int32_t* row = ints.typed_data() + j * kForcingInts;
    const T* real = reals.typed_data() + j * kForcingReals;
    Grid<T>& f = out[j];
    f = Grid<T>{};
    f.dim = row[k_forcing_ints_dim], f.components = row[k_forcing_ints_components];
    if (f.dim < 1 || f.dim > dim || f.components < 1 || f.components > 3)
      return ffi::Error::InvalidArgument("chunk: a forcing of 1 to the positions' axes and 1 to 3 components");
    int64_t nodes = 1, axis_at = row[k_forcing_ints_axes_start];
    for (int a = f.dim - 1; a >= 0; --a) {
      f.n[a] = row[k_forcing_ints_n_0 + a];
      if (f.n[a] < 2) return ffi::Error::InvalidArgument("chunk: a forcing's axes hold 2 nodes or more");
      f.stride[a] = nodes, nodes *= f.n[a];
    }
    for (int a = 0; a < f.dim; ++a) {
      if (axis_at + f.n[a] > static_cast<int64_t>(axes.element_count()))
        return ffi::Error::InvalidArgument("chunk: a forcing's axes past forcing_axes");
      f.axis[a] = axes.typed_data() + axis_at, axis_at += f.n[a];
      f.uniform[a] = row[k_forcing_ints_uniform_0 + a] != 0, f.periodic[a] = row[k_forcing_ints_periodic_0 + a] != 0;
      f.origin[a] = real[k_forcing_reals_origin_0 + a], f.inv[a] = real[k_forcing_reals_inv_0 + a];
      f.lo[a] = real[k_forcing_reals_lo_0 + a], f.hi[a] = real[k_forcing_reals_hi_0 + a];
    }
    f.n_times = row[k_forcing_ints_times];
    const int64_t slices = f.n_times == 0 ? 1 : f.n_times;
    if (f.n_times == 1 || values[j].element_count() != slices * nodes * f.components ||
        row[k_forcing_ints_times_start] + f.n_times > static_cast<int64_t>(times.element_count()))
      return ffi::Error::InvalidArgument("chunk: a forcing's values (T, *shape, components), its times in forcing_times");
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
    return ffi::Error::InvalidArgument("chunk: drift_kinds and drift_numbers hold one row per drift");
  for (int64_t j = 0; j < count; ++j) {
    const int32_t* row = kinds.typed_data() + j * kDriftKinds;
    Drift<T> d{row[k_drift_kinds_rule], row[k_drift_kinds_sample], row[k_drift_kinds_second], {}};
    if (d.sample >= forcings || d.second >= forcings || d.rule < kWindage || d.rule > kLeewayEach ||
        (d.sample < 0 && d.rule != kRise))
      return ffi::Error::InvalidArgument("chunk: a drift of a known rule reading forcings the call holds");
    for (int i = 0; i < FLOWKIT_DRIFT_NUMBERS; ++i) d.number[i] = numbers.typed_data()[j * FLOWKIT_DRIFT_NUMBERS + i];
    out.push_back(d);
  }
  return ffi::Error::Success();
}

// Each lane's probes of the forcings, their values at its stage point and its leeway side.
template <typename T>
struct Drifting {
  Probe<T> forcing[kMaxForcings];
  T sampled[kMaxForcings][3][kLanes];  // each forcing at the stage point (its data's units)
  T orientation[kLanes];               // leeway's side (+1 right of downwind, -1 left)
  T coefficients[FLOWKIT_LEEWAY_COEFFICIENTS][kLanes];  // leeway_each's, per element

  void reset() {
    for (auto& probe : forcing) probe.reset();
  }
};

// What every group's steps share of the drifts: the forcings, each one's time at every stage of
// every step on its own time axis (`when`: (forcings, steps, rows)), and the drifts' rules.
template <typename T>
struct Drifts {
  int n_forcings = 0;
  Grid<T> forcings[kMaxForcings];
  std::vector<When<T>> when;
  std::vector<Drift<T>> drifts;
  int64_t steps = 0;
  int rows = 0;
  const T* orientation = nullptr;   // each row's side, or null without drifts
  const T* coefficients = nullptr;  // each row's leeway_each coefficients, or null without that rule
  const Drift<T>* jibing = nullptr;  // the leeway_each rule whose elements jibe, or null
  bool x64 = false;                  // JAX's default floats are float64 (its jax_enable_x64)
  uint32_t jumps_tag = 0;            // what a jibe's key is folded with first (particles/stepping.py)

  // Lane g's side and coefficients from row p.
  void load_lane(Drifting<T>& q, int g, int64_t p) const {
    q.orientation[g] = orientation != nullptr ? orientation[p] : T(1);
    for (int c = 0; c < FLOWKIT_LEEWAY_COEFFICIENTS; ++c)
      q.coefficients[c][g] = coefficients != nullptr ? coefficients[p * FLOWKIT_LEEWAY_COEFFICIENTS + c] : T(0);
  }

  const When<T>& at(int j, int64_t k, int i) const { return when[(j * steps + k) * rows + i]; }
};

// The drifts of a call as its buffers give them (FLOWKIT_DRIFT_INPUTS, read as `in_<name>`), for
// `n` rows, the steps starting at `t_start` of lengths `h_step`, the stages at `c`; or the error
// that names what does not match.
template <typename T, typename B, typename S>
ffi::Error drifts_from(const B (&values)[kMaxForcings], const B& axes, const B& times, const S& ints, const B& reals,
                       const S& kinds, const B& numbers, const B& orientation, const B& coefficients, int64_t n,
                       int dim, bool spherical, const T* t_start, const T* h_step, const T* c, int64_t steps, int rows,
                       Drifts<T>& out) {
  const ffi::Error forcing_error = forcings_of<T>(ints, reals, values, axes, times, dim, spherical, out.forcings, out.n_forcings);
  if (forcing_error.failure()) return forcing_error;
  const ffi::Error drift_error = drifts_of<T>(kinds, numbers, out.n_forcings, out.drifts);
  if (drift_error.failure()) return drift_error;
  if (!out.drifts.empty() && orientation.element_count() != n)
    return ffi::Error::InvalidArgument("chunk: drifting rows each take an orientation");
  out.orientation = out.drifts.empty() ? nullptr : orientation.typed_data();
  for (const Drift<T>& d : out.drifts)
    if (d.rule == kLeewayEach) out.jibing = &d;
  if (out.jibing != nullptr && coefficients.element_count() != n * FLOWKIT_LEEWAY_COEFFICIENTS)
    return ffi::Error::InvalidArgument("chunk: leeway of each element's own takes 6 coefficients per row");
  out.coefficients = out.jibing != nullptr ? coefficients.typed_data() : nullptr;
  out.steps = steps, out.rows = rows;
  out.when.resize(out.n_forcings * steps * rows);
  for (int j = 0; j < out.n_forcings; ++j)
    for (int64_t k = 0; k < steps; ++k)
      for (int i = 0; i < rows; ++i)
        out.when[(j * steps + k) * rows + i] =
            when_at(out.forcings[j].times, out.forcings[j].n_times, t_start[k] + c[i] * h_step[k] + out.forcings[j].offset);
  return ffi::Error::Success();
}

// The lanes' position rates `u` at their stage points `y` (stage i of step k) with every drift
// added in the order of the model's rules (particles.drift), each forcing sampled there first;
// `east_factor`: on the sphere, the degrees of longitude a metre there (`spherical`: the rates
// are degrees a second; else the drifts' m/s are added as they are).
template <typename T>
FLOWKIT_HOT void add_drifts(const Drifts<T>& s, Drifting<T>& q, const T (&y)[3][kLanes], typename Lanes<T>::M moving,
                            int64_t k, int i, int dim, bool spherical, typename Lanes<T>::V east_factor,
                            T (&u)[3][kLanes]) {
  if (s.drifts.empty()) return;
  for (int j = 0; j < s.n_forcings; ++j) sample_forcing(s.forcings[j], q.forcing[j], y, moving, s.at(j, k, i), q.sampled[j]);
  for (const Drift<T>& d : s.drifts)
    add_drift<T>(d, q.sampled, y, q.orientation, q.coefficients, dim, spherical, east_factor, u);
}

// The corners of the forcings' next slices fetched a step ahead, where step k + 1 moves a
// forcing's series on (`prefetch_corners`).
template <typename T>
void prefetch_forcings(const Drifts<T>& s, const Drifting<T>& q, typename Lanes<T>::M moving, int64_t k) {
  if (s.drifts.empty() || k + 1 >= s.steps) return;
  const int last = s.rows - 2;
  for (int j = 0; j < s.n_forcings; ++j)
    if (s.at(j, k + 1, last).slice != s.at(j, k, last).slice)
      prefetch_corners(s.forcings[j], q.forcing[j], moving, s.at(j, k + 1, last).slice);
}

// The lanes `took` that took global step `step` (of length h) jibed as Leeway.jumped jibes them:
// each switches sides where JAX's `uniform` of its row's key (`keys`, the raw pairs; the lanes'
// rows `slot`) folded with the jumps' tag, the step and the model's index among the random ones
// (stepping.jumped_batch) falls below the chance of a jibe in the step, 1 - (1 - p)^(|h| / 1 h);
// the draw in JAX's default precision (`x64`), the keys hashed in vectors across the lanes.
template <typename T>
__attribute__((noinline)) void jibe_lanes(const Drifts<T>& s, Drifting<T>& q, const int64_t* slot,
                                          const uint32_t* keys, int64_t step, typename Lanes<T>::M took, T h) {
  typedef uint32_t U __attribute__((vector_size(kLanes * sizeof(uint32_t))));
  if (!any_lane(took)) return;
  const Drift<T>& d = *s.jibing;
  const double chance = 1.0 - std::pow(1.0 - static_cast<double>(d.number[0]), std::abs(static_cast<double>(h)) / 3600.0);
  U k0, k1;
  for (int g = 0; g < kLanes; ++g) k0[g] = keys[2 * slot[g]], k1[g] = keys[2 * slot[g] + 1];
  const uint32_t folds[3] = {s.jumps_tag, static_cast<uint32_t>(step), static_cast<uint32_t>(d.number[1])};
  for (uint32_t data : folds) threefry2x32(k0, k1, U{}, U{} + data, k0, k1);  // fold_in, thrice
  U b0, b1;
  threefry2x32(k0, k1, U{}, U{}, b0, b1);
  for_each_lane(took, [&](int g) {
    double u;
    if (s.x64) {
      const uint64_t mantissa = (((static_cast<uint64_t>(b0[g]) << 32) | b1[g]) >> 12) | 0x3FF0000000000000ull;
      std::memcpy(&u, &mantissa, sizeof u);
    } else {
      const uint32_t mantissa = ((b0[g] ^ b1[g]) >> 9) | 0x3F800000u;
      float f;
      std::memcpy(&f, &mantissa, sizeof f);
      u = f;
    }
    if (u - 1.0 < chance) q.orientation[g] = -q.orientation[g];
  });
}

}  // namespace
