"""Releases as spills happen: at a point or along a line, at once or over a duration, at the
surface or at depth, of a mass or a volume of oil shared among the elements."""

from typing import NamedTuple

import numpy as np

from .properties import OilType

METRES_PER_DEGREE = 111_195.0
"""A degree of latitude on the mean Earth (radius 6 371 km)."""


class Spill(NamedTuple):
    """What `fk.track` takes for a spill: `fk.track(field, spill.seeds, ..., t_release=
    spill.t_release, particles=fk.particles.Oil(oil), particle_state=spill.particle_state)`."""

    seeds: np.ndarray
    t_release: np.ndarray
    particle_state: dict


def spill(
    oil: OilType | str,
    at,
    number: int,
    *,
    mass: float | None = None,
    volume: float | None = None,
    rate: float | None = None,
    duration: float = 0.0,
    start: float = 0.0,
    to=None,
    radius: float = 0.0,
    spherical: bool = False,
    seed: int = 0,
) -> Spill:
    """`number` elements of `oil` released from `at` (a position: lon/lat or x/y, and depth
    below the surface on 3-D fields), or along the line from `at` to `to`, evenly over
    `duration` seconds from `start`, scattered within `radius` metres.

    The oil released is `mass` kg, or `volume` m³ (at its density at 15 °C), or `rate` kg/s
    over the duration; it is shared equally, each element's by the oil's pseudo-components."""
    oil = OilType.named(oil) if isinstance(oil, str) else oil
    given = [v is not None for v in (mass, volume, rate)]
    if sum(given) != 1:
        raise ValueError("spill: give one of mass= (kg), volume= (m³) or rate= (kg/s, with duration=)")
    if rate is not None and not duration > 0:
        raise ValueError(f"spill: rate={rate} kg/s needs a duration > 0 s, got duration={duration}")
    if number < 1:
        raise ValueError(f"spill: number must be at least 1 element, got {number}")
    if volume is not None:
        mass = volume * float(oil.density(288.15))
    total = float(rate * duration if rate is not None else mass)  # type: ignore[operator]
    a = np.asarray(at, np.float64)
    b = a if to is None else np.asarray(to, np.float64)
    along = (np.arange(number) + 0.5) / number if to is not None else np.zeros(number)
    seeds = a + along[:, None] * (b - a)
    if radius > 0:
        rng = np.random.default_rng(seed)
        r, angle = radius * np.sqrt(rng.uniform(size=number)), rng.uniform(0, 2 * np.pi, number)
        offset = np.column_stack([r * np.cos(angle), r * np.sin(angle)])
        if spherical:
            offset = offset / METRES_PER_DEGREE
            offset[:, 0] /= np.cos(np.deg2rad(seeds[:, 1]))
        seeds[:, :2] += offset
    t_release = start + duration * np.arange(number) / number
    components = np.outer(np.full(number, total / number), np.asarray(oil.mass_fraction))
    return Spill(seeds, t_release, {"components": components})
