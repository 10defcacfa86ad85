"""Reading and writing fields on the host (NumPy allowed here, never in a step)."""

from .npz import load_grid_npz as load_grid_npz, save_grid_npz as save_grid_npz
