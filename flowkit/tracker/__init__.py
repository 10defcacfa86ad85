"""`track()`: one compiled program advances all particles a chunk of steps; a thin driver loops.

Inside a chunk (`advance`): particles are sharded over the local devices (`shard_map`), split
into cache-sized blocks (`lax.map`), and each block runs `lax.scan` over saves, each save a
`lax.scan` over `save_every` steps. A step is: release due particles, one integrator step of
the whole block, the boundary, the domain and finiteness checks, all with `jnp.where`.
The driver compiles the chunk once per run shape (AOT, cached), then calls it chunk after chunk,
copying each chunk's saved frames to the host and updating the progress bar.
"""

from .api import track as track, track_ensemble as track_ensemble
from .cache import clear_caches as clear_caches, compile_count as compile_count
from .pieces import RunPieces as RunPieces
from .plan import RunPlan as RunPlan, block_size as block_size, bucket_size as bucket_size, prepare as prepare
from .run import TrackRun as TrackRun
