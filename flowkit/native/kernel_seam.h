// The C++ side of the kernels' one seam (flowkit/tracker/seam.py), shared by every kernel of the
// library: each kernel lists its input buffers, results and attributes once, as X-macros of
// `(name, element)` and `(name, type)`, and these macros write from those lists the handler's
// reads by name and the lines of its declared layout, which Python parses (`flowkit.native.
// Layout`) and checks against its own declaration. Also the arithmetic every kernel shares: a
// time's slice and weight in time (fields.base.time_weights).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
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
// TYPE`, `kind NAME CODE NODES`, `walls NAME CODE`, `inlet NAME CODE`, `capacity NAME VALUE`.
#define FLOWKIT_STR(v) #v
#define FLOWKIT_LINE_INPUT(name, element) "input " #name " " #element "\n"
#define FLOWKIT_LINE_RESULT(name, element) "result " #name " " #element "\n"
#define FLOWKIT_LINE_ATTR(name, type) "attr " #name " " #type "\n"
#define FLOWKIT_LINE_KIND(Name, name, code, nodes) "kind " #name " " #code " " #nodes "\n"
#define FLOWKIT_LINE_WALLS(Name, name, code) "walls " #name " " #code "\n"
#define FLOWKIT_LINE_INLETS(Name, name, code) "inlet " #name " " #code "\n"
#define FLOWKIT_LINE_CAPACITY(name, value) "capacity " name " " FLOWKIT_STR(value) "\n"

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

}  // namespace
