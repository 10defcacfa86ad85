"""One vocabulary of wall modes for every boundary (boxes, round domains, mesh walls, the walls of
an inlet), and its one validator."""

WALL_MODES = ("open", "periodic", "reflect", "slip", "absorb", "stick")
"""What a wall does to a particle whose step reaches it:

- `open`: nothing (the field's own domain still ends the particle: `OUT_OF_DOMAIN`);
- `periodic`: it re-enters through the opposite side (boxes);
- `reflect`: specular reflection on the wall;
- `slip`: it is put onto the wall and slides along it;
- `absorb` / `stick`: it stops where its step met the wall, status `ABSORBED`.
"""

SPELLINGS = {"reflective": "reflect", "absorbing": "absorb", "clamp": "slip"}
"""Other names accepted for a mode (the box classes' adjectives, `clamp` for a box's slip)."""


def wall_mode(mode, allowed: tuple[str, ...] = WALL_MODES, where: str = "mode") -> str:
    """`mode` in the one vocabulary, checked against the modes `allowed` where it is used."""
    canonical = SPELLINGS.get(mode, mode) if isinstance(mode, str) else mode
    if canonical not in allowed:
        others = sorted(k for k, v in SPELLINGS.items() if v in allowed)
        raise ValueError(f"{where} must name one of {list(allowed)}{f' (or {others})' if others else ''}, got {mode!r}")
    return canonical
