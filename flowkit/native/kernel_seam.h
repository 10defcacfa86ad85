// The C++ side of the kernels' one seam (flowkit/tracker/seam.py), shared by every kernel of the
// library: each kernel lists its input buffers, results and attributes once, as X-macros of
// `(name, element)` and `(name, type)`, and these macros write from those lists the handler's
// reads by name and the lines of its declared layout, which Python parses (`flowkit.native.
// Layout`) and checks against its own declaration. Also the arithmetic the kernels share: the
// lane groups' vectors and helpers, the Fast2Sum of a step's end, the latitude's cosine, the box
// fold of `fk.Reflective`, a time's slice and weight in time (fields.base.time_weights).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "xla/ffi/api/ffi.h"

// A list's entry as an enumerator `kName = code` (cell kinds, wall and inlet modes).
#define FLOWKIT_AS_ENUM(Name, name, code, ...) k##Name = code,

// Buffers by element (`real`: the positions' precision DT, in the handler's template), and the
// index of each buffer in call order.
#define FLOWKIT_ELEMENT_real DT
#define FLOWKIT_ELEMENT_s32 ffi::S32
#define FLOWKIT_INPUT_INDEX(name, ...) kIn_##name,
#define FLOWKIT_RESULT_INDEX(name, ...) kOut_##name,

// The handler's reads, each by its declared name: `in_NAME`, `out_NAME` buffers and attributes
// `NAME`; a buffer or attribute missing or of another type returns its error.
#define FLOWKIT_READ(source, kind, name, index)            \
  auto name##_read = source.get<kind>(index);             \
  if (name##_read.has_error()) return name##_read.error(); \
  auto name = *name##_read;
#define FLOWKIT_READ_INPUT(name, element) FLOWKIT_READ(args, ffi::Buffer<FLOWKIT_ELEMENT_##element>, in_##name, kIn_##name)
#define FLOWKIT_READ_RESULT(name, element) FLOWKIT_READ(rets, ffi::Buffer<FLOWKIT_ELEMENT_##element>, out_##name, kOut_##name)
#define FLOWKIT_READ_ATTR(name, type) FLOWKIT_READ(attrs, type, name, #name)

// The declared layout, one entry a line: `input NAME ELEMENT`, `result NAME ELEMENT`, `attr NAME
// TYPE`, `kind NAME CODE NODES`, `walls NAME CODE`, `inlet NAME CODE`, `capacity NAME VALUE`,
// `column TABLE NAME` and `drift NAME CODE NUMBERS` (drift_rules.h).
#define FLOWKIT_STR(v) #v
#define FLOWKIT_LINE_INPUT(name, element) "input " #name " " #element "\n"
#define FLOWKIT_LINE_RESULT(name, element) "result " #name " " #element "\n"
#define FLOWKIT_LINE_ATTR(name, type) "attr " #name " " #type "\n"
#define FLOWKIT_LINE_KIND(Name, name, code, nodes) "kind " #name " " #code " " #nodes "\n"
#define FLOWKIT_LINE_WALLS(Name, name, code) "walls " #name " " #code "\n"
#define FLOWKIT_LINE_INLETS(Name, name, code) "inlet " #name " " #code "\n"
#define FLOWKIT_LINE_CAPACITY(name, value) "capacity " name " " FLOWKIT_STR(value) "\n"
// A row's column in a table of rows (a kernel's sub-layout): its index in the row, and its line
// `column TABLE NAME`, in the row's order.
#define FLOWKIT_COLUMN_INDEX(table, name) k_##table##_##name,
#define FLOWKIT_LINE_COLUMN(table, name) "column " #table " " #name "\n"

namespace {

template <typename T>
inline T clip(T v, T lo, T hi) {
  return std::min(std::max(v, lo), hi);
}

// The set lanes of a mask (a vector of GCC's extensions, lanes -1 or 0) as the bits of an
// integer (lane g: bit g), from the lanes' sign bits in one or two instructions where the build
// has them (a loop over the lanes compiled to an extraction per lane: 6 % of the ocean kernel's
// time in `any_lane` alone).
template <typename M>
inline __attribute__((always_inline)) uint32_t lane_bits(M mask) {
  constexpr size_t width = sizeof(mask[0]), lanes = sizeof(M) / width;
#if defined(__AVX512F__)
  if constexpr (sizeof(M) == 64) {
    __m512i v;
    std::memcpy(&v, &mask, sizeof v);
    if constexpr (width == 8) return _mm512_test_epi64_mask(v, v);
    if constexpr (width == 4) return _mm512_test_epi32_mask(v, v);
  }
#endif
#if defined(__AVX__)
  if constexpr (sizeof(M) % 32 == 0 && (width == 4 || width == 8)) {
    __m256 part[sizeof(M) / 32];
    std::memcpy(part, &mask, sizeof part);
    uint32_t bits = 0;
    for (size_t k = 0; k < sizeof(M) / 32; ++k)
      bits |= static_cast<uint32_t>(width == 4 ? _mm256_movemask_ps(part[k])
                                               : _mm256_movemask_pd(_mm256_castps_pd(part[k])))
              << (k * 32 / width);
    return bits;
  }
#endif
#if defined(__SSE2__)
  if constexpr (sizeof(M) % 16 == 0 && (width == 4 || width == 8)) {
    __m128 part[sizeof(M) / 16];
    std::memcpy(part, &mask, sizeof part);
    uint32_t bits = 0;
    for (size_t k = 0; k < sizeof(M) / 16; ++k)
      bits |= static_cast<uint32_t>(width == 4 ? _mm_movemask_ps(part[k]) : _mm_movemask_pd(_mm_castps_pd(part[k])))
              << (k * 16 / width);
    return bits;
  }
#endif
  uint32_t bits = 0;
  for (size_t g = 0; g < lanes; ++g) bits |= static_cast<uint32_t>(mask[g] != 0) << g;
  return bits;
}

// A group's lanes (a vector of GCC's extensions) or a number loaded from memory, and std::max
// and std::abs lane by lane: the vector helpers both kernels use.
template <typename V, typename E>
inline __attribute__((always_inline)) V load(const E* lanes) {
  V v;
  std::memcpy(&v, lanes, sizeof v);
  return v;
}
template <typename V>
inline __attribute__((always_inline)) V vmax(V a, V b) {  // std::max(a, b), lane by lane
  return a < b ? b : a;
}
template <typename V>
inline __attribute__((always_inline)) V vabs(V a) {
  return a < 0 ? -a : a;
}

// x + (increment + remainder) rounded, and what that rounding left out (`left`): Fast2Sum, exact
// where |x| >= |increment + remainder| (a position and its step), so that a position and its
// remainder hold it to about twice the precision (flowkit.integrators.runge_kutta.compensated_sum;
// the builds contract no product and sum, which would change it).
template <typename T>
inline __attribute__((always_inline)) void compensated_sum(T x, T increment, T remainder, T& rounded, T& left) {
  const T total = increment + remainder;
  rounded = x + total;
  left = total - (rounded - x);
}

// Whether any lane of a mask is set.
template <typename M>
inline __attribute__((always_inline)) bool any_lane(M mask) {
  return lane_bits(mask) != 0;
}
inline __attribute__((always_inline)) bool any_lane(bool mask) { return mask; }

// `visit(g)` for each set lane g of a mask, in order, and for no other.
template <typename M, typename F>
inline __attribute__((always_inline)) void for_each_lane(M mask, F&& visit) {
  for (uint32_t bits = lane_bits(mask); bits != 0; bits &= bits - 1) visit(__builtin_ctz(bits));
}

// Degrees and the Earth's radius as flowkit/fields/grid.py has them (degrees_per_second).
constexpr double kDegrees = 180.0 / 3.14159265358979323846, kEarthRadius = 6371000.0;
constexpr double kRadians = 3.14159265358979323846 / 180.0;  // a degree's

// Particles stepped side by side by the kernels that carry groups (ocean, grid): a 64-byte
// register of floats in the AVX-512 build, where a group's chains of arithmetic then fill the
// core twice as wide; 8 in the others (16 spill AVX2's registers).
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#else
constexpr int kLanes = 8;
#endif
// The stages' functions are inlined into a kernel's step and the rare paths kept out of line, by
// attribute rather than by the compiler's judgement: its inlining moved with unrelated code
// elsewhere in the handler and, twice, halved the ocean kernel's speed.
#define FLOWKIT_HOT inline __attribute__((always_inline))

// A group's lanes as one vector (GCC's vector extensions: one AVX2 register of floats in the AVX2
// build, split into the baseline's 16-byte registers in the other), and a lane mask (-1 or 0).
template <typename T>
struct Lanes {
  typedef T V __attribute__((vector_size(kLanes * sizeof(T))));
  typedef std::conditional_t<sizeof(T) == 4, int32_t, int64_t> I;
  typedef I M __attribute__((vector_size(kLanes * sizeof(T))));
};
// int32 lanes as the lanes' integer vector (of T's width), and back.
template <typename T>
FLOWKIT_HOT typename Lanes<T>::M load_int(const int32_t* lanes) {
  typedef int32_t W __attribute__((vector_size(kLanes * sizeof(int32_t))));
  return __builtin_convertvector(load<W>(lanes), typename Lanes<T>::M);
}
template <typename T>
FLOWKIT_HOT void store_int(typename Lanes<T>::M lanes, int32_t* out) {
  typedef int32_t W __attribute__((vector_size(kLanes * sizeof(int32_t))));
  const W narrow = __builtin_convertvector(lanes, W);
  std::memcpy(out, &narrow, sizeof narrow);
}
template <typename V>
FLOWKIT_HOT V vclip(V v, V lo, V hi) {  // clip(v, lo, hi), lane by lane
  const V above = v < lo ? lo : v;
  return hi < above ? hi : above;
}
// sin(r) for r in [-pi/2, pi/2], lane by lane without a call to libm: its Taylor series, within
// an ulp or two of std::sin in either precision.
template <typename T, typename V>
FLOWKIT_HOT V vsin_quadrant(V r) {
  constexpr bool wide = sizeof(T) == 8;
  const V zero = V{}, r2 = r * r;
  // 1/3!, 1/5!, ... to 1/19! (float64) or 1/13! (float32), Horner's rule from the last
  constexpr double inverse_factorials[] = {1.0 / 6, 1.0 / 120, 1.0 / 5040, 1.0 / 362880, 1.0 / 39916800,
                                           1.0 / 6227020800.0, 1.0 / 1307674368000.0, 1.0 / 355687428096000.0,
                                           1.0 / 121645100408832000.0};
  constexpr int terms = wide ? 9 : 6;
  V sum = zero;
  for (int k = terms - 1; k >= 0; --k) sum = (k % 2 == 0 ? -T(inverse_factorials[k]) : T(inverse_factorials[k])) + r2 * sum;
  return r + r * (r2 * sum);
}

// cos(x) and sin(x) of latitudes x in radians, lane by lane: sin(pi/2 - |x|) and sin(x) (x beyond
// a pole clipped there, where the metric's floor applies), within an ulp or two of std::cos and
// std::sin, and as close in relative terms near a pole.
template <typename T, typename V>
FLOWKIT_HOT void vcos_sin_latitude(V x, V& cos, V& sin) {
  constexpr bool wide = sizeof(T) == 8;
  const T hi = wide ? T(1.5707963267948966) : T(1.57079637f), lo = wide ? T(6.123233995736766e-17) : T(-4.37113883e-8f);
  const V zero = V{};
  cos = vsin_quadrant<T>(vmax((hi - vabs(x)) + lo, zero));
  sin = vsin_quadrant<T>(vclip(x, zero - hi, zero + hi));
}

// cos(latitude) at the lanes' stage points `y` (degrees), kept above 1e-6
// (fields.grid.degrees_per_second): the cosine of their step start's latitude `start`
// (`cos_start`, `sin_start`) turned by the small angle d from there, cos(a + d) = cos a cos d -
// sin a sin d, with short series for cos d and sin d, off the chain of a stage's arithmetic that
// a whole cosine's series would lengthen; a lane whose stage point lies farther than `kTurn`
// from its start takes the whole cosine (worked out only where a `moving` lane needs it; each
// lane's choice its own, whatever its group holds).
constexpr double kTurn = 0.05;  // radians: the series below are then within an ulp in either precision
template <typename T>
FLOWKIT_HOT typename Lanes<T>::V cos_near(typename Lanes<T>::V y, typename Lanes<T>::V start,
                                          typename Lanes<T>::V cos_start, typename Lanes<T>::V sin_start,
                                          typename Lanes<T>::M moving) {
  using V = typename Lanes<T>::V;
  using M = typename Lanes<T>::M;
  const V floor = V{} + T(1e-6);
  const V d = (y - start) * static_cast<T>(kRadians), d2 = d * d;
  const M far = ~(vabs(d) <= T(kTurn));
  V whole{};
  if (any_lane(moving & far)) {
    V sin;
    vcos_sin_latitude<T>(y * static_cast<T>(kRadians), whole, sin);
  }
  V cos_d, sin_d;  // to d^8 / 8! and d^7 / 7! (float64), d^4 / 4! and d^5 / 5! (float32)
  if constexpr (sizeof(T) == 8) {
    cos_d = T(1) + d2 * (T(-0.5) + d2 * (T(1.0 / 24) + d2 * (T(-1.0 / 720) + d2 * T(1.0 / 40320))));
    sin_d = d + d * (d2 * (T(-1.0 / 6) + d2 * (T(1.0 / 120) + d2 * T(-1.0 / 5040))));
  } else {
    cos_d = T(1) + d2 * (T(-0.5) + d2 * T(1.0 / 24));
    sin_d = d + d * (d2 * (T(-1.0 / 6) + d2 * T(1.0 / 120)));
  }
  return vmax(far ? whole : cos_start * cos_d - sin_start * sin_d, floor);
}

// Velocities east and north in m/s as degrees a second, `east_factor` the degrees of longitude
// a metre at the lanes' latitudes (fields.grid.degrees_per_second).
template <typename T>
FLOWKIT_HOT void in_degrees(typename Lanes<T>::V east_factor, typename Lanes<T>::V& east,
                            typename Lanes<T>::V& north) {
  east = east * east_factor;
  north = north * static_cast<T>(kDegrees / kEarthRadius);
}

// std::sqrt of a number, or lane by lane of a group's vector (one vector instruction: no errno).
template <typename T, typename V>
inline V lane_sqrt(V v) {
  if constexpr (std::is_same_v<V, T>) {
    return std::sqrt(v);
  } else {
    T lanes[sizeof(V) / sizeof(T)];
    std::memcpy(lanes, &v, sizeof v);
    for (T& lane : lanes) lane = std::sqrt(lane);
    std::memcpy(&v, lanes, sizeof v);
    return v;
  }
}

// x mod period as jnp.mod computes it: the remainder takes the divisor's sign.
template <typename T>
inline T float_mod(T x, T period) {
  T r = std::fmod(x, period);
  if (r != 0 && (r < 0) != (period < 0)) r += period;
  return r;
}

// Lane g's step end `y` mirrored into the box `box` (lo, hi) on every axis it left, as
// `fk.Reflective` folds it (AbstractBox._fold: the distance travelled kept; inside the box no
// coordinate changes); whether one did.
template <typename T>
FLOWKIT_HOT bool box_fold(const T* box, int dim, T (&y)[3][kLanes], int g) {
  bool moved = false;
  for (int d = 0; d < dim; ++d) {
    const T lo = box[d], hi = box[dim + d], v = y[d][g];
    if (!(v < lo || v > hi)) continue;
    const T length = hi - lo, twice = 2 * length, folded = float_mod(v - lo, twice);
    y[d][g] = lo + (folded > length ? twice - folded : folded);
    moved = true;
  }
  return moved;
}

// A time's slice of a series (the one at or before it, clamped to the series) and the weight of
// the next one, as fields.base.time_weights computes them; slice 0, weight 0 for a steady field
// (`times` null).
template <typename T>
struct When {
  int64_t slice;
  T wt;
};
template <typename T>
inline When<T> when_at(const T* times, int64_t n_times, T t) {
  if (times == nullptr) return {0, T(0)};
  int64_t it = (std::upper_bound(times, times + n_times, t) - times) - 1;
  it = std::min<int64_t>(std::max<int64_t>(it, 0), n_times - 2);
  return {it, clip((t - times[it]) / (times[it + 1] - times[it]), T(0), T(1))};
}

// Threefry-2x32 with 20 rounds, as JAX's `threefry2x32` hashes the count pair (x0, x1) under the
// key (k0, k1); on uint32 scalars or on vectors of them (a lane each).
template <typename U>
FLOWKIT_HOT void threefry2x32(U k0, U k1, U x0, U x1, U& out0, U& out1) {
  constexpr int rotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const U ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  U x[2] = {x0 + ks[0], x1 + ks[1]};
  for (int block = 0; block < 5; ++block) {
    for (int r : rotations[block % 2]) {
      x[0] += x[1];
      x[1] = (x[1] << r) | (x[1] >> (32 - r));
      x[1] ^= x[0];
    }
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  out0 = x[0], out1 = x[1];
}

}  // namespace
