"""Reading and writing fields and results on the host (NumPy allowed here, never in a step)."""

from ..fields.streamed import StreamedField as StreamedField
from . import ocean as ocean
from .leeway import (
    LeewayClass as LeewayClass,
    leeway as leeway,
    leeway_class as leeway_class,
    leeway_classes as leeway_classes,
)
from .npz import load_grid_npz as load_grid_npz, save_grid_npz as save_grid_npz
from .read import read as read, read_vtk as read_vtk
from .vtk import read_vti_arrays as read_vti_arrays, write_vti as write_vti, write_vtu as write_vtu
from .xarray import from_xarray as from_xarray
