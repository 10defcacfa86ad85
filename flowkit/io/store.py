"""The progress a streamed trajectory store records (zarr attributes), read by
`Trajectory.load` and written by the tracker's `ZarrSink`.

Until its last batch is written a store's attribute `flowkit_complete` is false and
`flowkit_batches_done` counts the batches written (of `flowkit_batches`, each of
`flowkit_batch_size` particles); frames not written are NaN, with status `NOT_WRITTEN_STATUS`
(-1). `flowkit_run` identifies the run that made it, so that `resume=True` continues only that run.
"""

NOT_WRITTEN_STATUS = -1
"""The status of a frame a streamed store has not been written yet (a run killed part-way)."""


def unfinished(attrs, n: int) -> tuple[int, int, int] | None:
    """For a store's `attrs` (of `n` particles): `(batches done, batches, particles held)` when
    its run did not finish, else None (finished, or not a streamed store)."""
    if attrs.get("flowkit_complete", True) is not False:
        return None
    done, total, size = (int(attrs[k]) for k in ("flowkit_batches_done", "flowkit_batches", "flowkit_batch_size"))
    return done, total, min(done * size, n)
