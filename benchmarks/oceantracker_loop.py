"""OceanTracker's stepping loop timed inside its own process, as the ocean benchmarks compare
flowkit with it (`ocean_models.py`, `schism_oceantracker.py`).

`TIMED_LOOP` goes at the head of a script that runs OceanTracker: it times each pass of the
solver's loop (`Solver.start_update_timer` to `stop_update_timer`: a step's hindcast reading,
integration, releases and bookkeeping) into the list `steps`, which the script returns.
`loop_rate` turns them into particle-steps per second over every step but the first, which
compiles OceanTracker's numba functions. Its whole run (the reader's set-up and those compiles,
25-30 s on this machine) is left out: whole runs of N and N/10 particles differ by less than
their set-ups vary. Both sides take their best: OceanTracker the faster loop of two runs
(`best_loop`), flowkit its fastest whole call (`best_seconds`: at least three, and as many as
fill a second, up to twenty), as a shared machine's neighbours slow some of either.
"""

import time

import numpy as np

TIMED_LOOP = """
import time
from oceantracker.main import OceanTracker  # first: importing the solver alone breaks its class importer
from oceantracker.solver.solver import Solver
steps = []  # seconds of each pass of the solver's stepping loop
start_step, stop_step = Solver.start_update_timer, Solver.stop_update_timer
def started(self):
    steps.append(-time.perf_counter())
    start_step(self)
def stopped(self):
    stop_step(self)
    steps[-1] += time.perf_counter()
Solver.start_update_timer, Solver.stop_update_timer = started, stopped
"""


def loop_rate(steps: list, released: int) -> tuple[float, float]:
    """`(particle-steps per second, seconds)` of the loop's steps after the first, `released`
    particles each."""
    after_first = np.asarray(steps[1:], np.float64)
    return released * len(after_first) / after_first.sum(), float(after_first.sum())


def best_loop(runs: list[dict]) -> tuple[dict, float, float]:
    """The run (an OceanTracker script's result: `steps`, `released`) whose loop was fastest, with
    its `loop_rate`."""
    rated = [(run, *loop_rate(run["steps"], run["released"])) for run in runs]
    return max(rated, key=lambda r: r[1])


def best_seconds(call, least: int = 3, most: int = 20, budget_s: float = 1.0) -> float:
    """The fastest wall-clock seconds of `call()` over at least `least` calls, and as many more
    as fit in `budget_s`, up to `most`."""
    times, start = [], time.perf_counter()
    while len(times) < least or (len(times) < most and time.perf_counter() - start < budget_s):
        begin = time.perf_counter()
        call()
        times.append(time.perf_counter() - begin)
    return min(times)
