"""Per-particle status codes, saved with every frame of a trajectory.

Like Parcels' status codes and VTK's ReasonForTermination: a particle is never dropped from the
arrays; its code says whether it is moving and, if not, why it stopped.
"""

import enum


class Status(enum.IntEnum):
    """What a particle is doing at a saved time."""

    ACTIVE = 0
    """Released and moving."""
    NOT_RELEASED = 1
    """Waiting for its release time (`t_release`); sits at its seed position."""
    OUT_OF_DOMAIN = 2
    """Stepped outside the field's domain (e.g. off a non-periodic grid) with no boundary to
    handle it; frozen at its last position inside."""
    ABSORBED = 3
    """Hit an absorbing wall; frozen at the point where its last step crossed the wall."""
    NONFINITE = 4
    """The field returned NaN/Inf (e.g. a masked cell); frozen at its last finite position."""
    MAX_STEPS = 5
    """An adaptive integrator hit its `max_steps` within one step; frozen where the step began."""
    SOLVER_FAILED = 6
    """An adaptive integrator failed otherwise (e.g. step size collapsed); frozen where the step began."""
    BEACHED = 7
    """Its step ended on land (a field with a land mask, e.g. ocean data): frozen at its last
    wet position; a seed on land starts so."""


def status_counts(status) -> dict[str, int]:
    """Count of particles per status name for one frame of codes."""
    import numpy as np

    codes = np.asarray(status)
    return {s.name.lower(): int(np.sum(codes == s.value)) for s in Status}
