"""Shared references for the tests."""

import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import vtk
from vtk.util.numpy_support import numpy_to_vtk, vtk_to_numpy

import flowkit as fk

ALL_INTEGRATORS = [fk.Euler(), fk.Midpoint(), fk.Heun(), fk.RK4()]

TEST_CACHE = Path(os.environ.get("FLOWKIT_TEST_CACHE", Path.home() / ".cache" / "flowkit" / "jax-tests"))
"""JAX's persistent compilation cache for the test processes and the apps they start: a run
after the first reuses the programs XLA compiled then (compiling is most of the suite's time);
delete the folder to start afresh."""
APP_CACHE = f"compilation_cache={TEST_CACHE}"

HANG = 1800
"""Seconds after which a subprocess the tests start (an app, a script) counts as hung: far over
what it takes on a loaded 2-core machine, so only a hang trips it."""


class Stopped(Exception):
    """A run stopped part-way on purpose (`stopped_after`)."""


def stopped_after(monkeypatch, batches: int):
    """Make the next run into a store stop (`Stopped`) once `batches` batches are written;
    returns a function that lets the runs after it finish."""
    from flowkit.tracker import sinks

    done = sinks.ZarrSink.batch_done

    def batch_done(self, totals=None):
        done(self, totals)
        if self.batches_done >= batches:
            raise Stopped

    monkeypatch.setattr(sinks.ZarrSink, "batch_done", batch_done)
    return lambda: monkeypatch.setattr(sinks.ZarrSink, "batch_done", done)


def columns(field) -> np.ndarray:
    """A `LayeredField`'s node columns (level depths, velocities, floor) as one host array."""
    arrays = (field.depths, field.velocities, field.floor)
    return np.concatenate([np.asarray(a).reshape(field.depths.shape[0], -1) for a in arrays], 1)


def exp_sin_field():
    """$\\dot x = x \\cos t$ per component: exact $x(t) = x_0 e^{\\sin t - \\sin t_0}$
    (time-dependent, nonlinear in t)."""
    import jax.numpy as jnp

    return fk.fields.Analytic(lambda t, x, args: x * jnp.cos(t), bounds=((-10.0, -10.0), (10.0, 10.0)), dim=2)


def exp_sin_exact(x0, t, t0=0.0):
    return np.asarray(x0) * np.exp(np.sin(t) - np.sin(t0))


def vtk_probe(reader, x, name, t=None):
    """VTK's own reader output probed at `x` (`vtkCompositeDataProbeFilter`): `(values, valid)`."""
    poly = vtk.vtkPolyData()
    pts = vtk.vtkPoints()
    pts.SetData(numpy_to_vtk(np.ascontiguousarray(x, np.float64), deep=True))
    poly.SetPoints(pts)
    probe = vtk.vtkCompositeDataProbeFilter()
    probe.SetInputData(poly)
    probe.SetSourceConnection(reader.GetOutputPort())
    if t is None:
        probe.Update()
    else:
        probe.UpdateTimeStep(t)
    out = probe.GetOutput().GetPointData()
    return vtk_to_numpy(out.GetArray(name)).reshape(len(x), -1).astype(np.float64), vtk_to_numpy(
        out.GetArray("vtkValidPointMask")
    ).astype(bool)


def agrees_with_vtk(field, reader, name, t=None, seed=0, lo=(0.0, 0.0, 0.0), hi=(2.0, 1.0, 1.0)):
    """At >= 97 % of random points in the box, our value equals VTK's probe within 1e-5
    relative; the rest are points on cell faces where VTK's tolerance test picks a neighbour."""
    rng = np.random.default_rng(seed)
    x = np.asarray(lo) + rng.uniform(size=(400, 3)) * (np.asarray(hi) - np.asarray(lo))
    theirs, valid = vtk_probe(reader, x, name, t)
    ours, inside = field.probe(x, 0.0 if t is None else t)
    both = valid & inside
    assert both.mean() > 0.95
    close = np.all(np.abs(ours - theirs) <= 1e-5 * np.maximum(1.0, np.abs(theirs)), axis=1)
    assert close[both].mean() >= 0.97, f"{(~close[both]).sum()} of {both.sum()} points differ"


def advance_without_host_traffic(run, chunks=3):
    """Compile `run`, then advance it `chunks` chunks with host<->device transfers disallowed.
    Returns the compile count after compiling (a later program of the same shape must not
    raise it) and the last chunk's frames."""
    run.compile()
    before = fk.tracker.compile_count()
    state, slots, _ = run.initial_state()
    with jax.transfer_guard("disallow"):
        for _ in range(chunks):
            state, frames = run.advance(state, slots)
        jax.block_until_ready(state)
    return before, frames


def arrays_in_every_build(script: str, tmp_path: Path) -> dict[str, dict[str, np.ndarray]]:
    """The arrays `script` saves (`np.savez("{path}", ...)`, with `tests/` on its path), run in a
    process of its own in each build of the kernels this CPU runs (`fk.native.cpu_runs()`), by
    build name. Each process must have loaded the build it was given."""
    found = {}
    for build in fk.native.cpu_runs():
        path = tmp_path / f"{build}.npz"
        env = {**os.environ, "FLOWKIT_NATIVE": build, "PYTHONPATH": str(Path(__file__).parent)}
        code = script.format(path=path) + "\nassert fk.native.build() == " + repr(build)
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=HANG)
        assert result.returncode == 0, result.stderr
        found[build] = dict(np.load(path))
    return found
