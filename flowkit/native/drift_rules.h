// The velocities a kernel adds to the current, each rule once in C++ beside its JAX form
// (flowkit/particles/drift.py, models.py): OpenDrift's windage, Stokes drift and leeway, from
// forcing fields sampled at each lane's stage point, in m/s east and north (turned into degrees
// a second on the sphere), and a constant rise or sink velocity along one axis (`Buoyant`, in
// the axis's own units). Each rule is a row of the
// kernel's `drift_kinds` (its code, the forcing it reads, a second forcing or -1) and of
// `drift_numbers` (its numbers, in the order below; Python's `DriftRule.numbers`). The list
// below is the one declaration of the rules, their codes and their count of numbers: the
// kernels' layouts print it (`drift NAME CODE NUMBERS`) and Python reads the codes from there.
#pragma once

#include <cmath>

#include "kernel_seam.h"

// Name, name, code, numbers:
// - windage: coefficient, depth (no drag below it, 3-D only): coefficient × wind.
// - stokes: period (s; unused where a second forcing holds it): the surface drift decaying
//   as exp(-2 k z), k = (2π/T)² / g, with depth z (3-D only).
// - leeway: downwind slope (%), crosswind slope (%), downwind offset (cm/s), crosswind
//   offset (cm/s): downwind along the wind and crosswind to its right for orientation +1
//   (mirrored for -1), each slope × wind speed + offset.
// - rise: the velocity, the axis (from the last where negative): added to that axis's rate.
// - leeway_each: leeway of each element's own coefficients (`coefficients`, a row per
//   particle: downwind slope and offset, right side's crosswind slope and offset, left side's;
//   the side by the sign of its orientation, +1 right); its numbers the chance of a jibe per
//   hour and the index of the model among the run's random ones (the kernel that jibes reads them).
#define FLOWKIT_DRIFT_RULES(X)                                                                    \
  X(Windage, windage, 0, 2) X(Stokes, stokes, 1, 1) X(Leeway, leeway, 2, 4) X(Rise, rise, 3, 2) \
  X(LeewayEach, leeway_each, 4, 2)
#define FLOWKIT_LEEWAY_COEFFICIENTS 6  // leeway_each's coefficients per element
#define FLOWKIT_DRIFT_NUMBERS 4  // the widest rule's numbers
#define FLOWKIT_LINE_DRIFT(Name, name, code, numbers) "drift " #name " " #code " " #numbers "\n"

namespace {

enum DriftRule : int32_t { FLOWKIT_DRIFT_RULES(FLOWKIT_AS_ENUM) };

constexpr double kGravity = 9.81;  // m/s², StokesDrift's dispersion relation

// One drift of a run, as its rows give it.
template <typename T>
struct Drift {
  int32_t rule, sample, second;  // the rule, the forcing it reads (or -1), a second forcing or -1
  T number[FLOWKIT_DRIFT_NUMBERS];
};

// The lanes' drift `d` in m/s (east, north) at their stage points `y` (`dim` coordinates, depth
// positive down third), from the forcings sampled there (`sampled[forcing][component]`, in
// their data's units, zero outside them) and each lane's `orientation` (leeway's side).
template <typename T>
FLOWKIT_HOT void drift_velocity(const Drift<T>& d, const T (*sampled)[3][kLanes], const T (&y)[3][kLanes],
                                const T* orientation, const T (*coefficients)[kLanes], int dim,
                                typename Lanes<T>::V& east, typename Lanes<T>::V& north) {
  using V = typename Lanes<T>::V;
  const V zero = V{};
  if (d.sample < 0) {
    east = zero, north = zero;
    return;
  }
  const V u = load<V>(sampled[d.sample][0]), v = load<V>(sampled[d.sample][1]);
  switch (d.rule) {
    case kWindage: {  // Windage.drift
      const V c = zero + d.number[0];
      const auto below = dim == 3 ? load<V>(y[2]) > d.number[1] : zero != zero;
      east = below ? zero : c * u, north = below ? zero : c * v;
      return;
    }
    case kStokes: {  // StokesDrift.drift
      east = u, north = v;
      if (dim < 3) return;
      const V period = d.second >= 0 ? load<V>(sampled[d.second][0]) : zero + d.number[0];
      const V omega = static_cast<T>(2 * 3.14159265358979323846) / vmax(period, zero + T(1e-3));
      const V k = omega * omega / static_cast<T>(kGravity);
      T decay[kLanes];
      const V exponent = T(-2) * k * vmax(load<V>(y[2]), zero);
      std::memcpy(decay, &exponent, sizeof exponent);
      for (int g = 0; g < kLanes; ++g) decay[g] = std::exp(decay[g]);
      east = u * load<V>(decay), north = v * load<V>(decay);
      return;
    }
    case kLeeway: {  // Leeway.drift
      const V speed = lane_sqrt<T>(u * u + v * v), scale = vmax(speed, zero + T(1e-12));
      const V along_u = u / scale, along_v = v / scale;
      const V downwind = (d.number[0] * speed + d.number[2]) / 100, crosswind = (d.number[1] * speed + d.number[3]) / 100;
      const V side = load<V>(orientation);
      const V sign = side > 0 ? zero + 1 : side < 0 ? zero - 1 : zero;
      east = downwind * along_u + sign * crosswind * along_v;  // right of downwind: (v, -u)
      north = downwind * along_v - sign * crosswind * along_u;
      return;
    }
    case kLeewayEach: {  // Leeway.drift of each element's coefficients (Leeway.coefficients)
      const V speed = lane_sqrt<T>(u * u + v * v), scale = vmax(speed, zero + T(1e-12));
      const V along_u = u / scale, along_v = v / scale;
      const auto right = load<V>(orientation) >= 0;
      const V downwind = (load<V>(coefficients[0]) * speed + load<V>(coefficients[1])) / 100;
      const V slope = right ? load<V>(coefficients[2]) : load<V>(coefficients[4]);
      const V offset = right ? load<V>(coefficients[3]) : load<V>(coefficients[5]);
      const V crosswind = (slope * speed + offset) / 100;
      east = downwind * along_u + crosswind * along_v;
      north = downwind * along_v - crosswind * along_u;
      return;
    }
  }
  east = zero, north = zero;
}

// The lanes' position rates `rate` (`dim` axes) with drift `d` added: its velocity east and
// north, in degrees a second on the sphere (`east_factor`: the degrees of longitude a metre
// there), or a rise along its axis.
template <typename T>
FLOWKIT_HOT void add_drift(const Drift<T>& d, const T (*sampled)[3][kLanes], const T (&y)[3][kLanes],
                           const T* orientation, const T (*coefficients)[kLanes], int dim, bool spherical,
                           typename Lanes<T>::V east_factor, T (&rate)[3][kLanes]) {
  using V = typename Lanes<T>::V;
  if (d.rule == kRise) {  // Buoyant.rhs: the velocity on its axis, a one-hot of the axis
    const int axis = ((static_cast<int>(d.number[1]) % dim) + dim) % dim;
    const V risen = load<V>(rate[axis]) + d.number[0];
    std::memcpy(rate[axis], &risen, sizeof risen);
    return;
  }
  V east, north;
  drift_velocity<T>(d, sampled, y, orientation, coefficients, dim, east, north);
  if (spherical) in_degrees<T>(east_factor, east, north);
  const V u0 = load<V>(rate[0]) + east, u1 = load<V>(rate[1]) + north;
  std::memcpy(rate[0], &u0, sizeof u0), std::memcpy(rate[1], &u1, sizeof u1);
}

}  // namespace
