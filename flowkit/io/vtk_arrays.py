"""Which arrays of a VTK data set are the velocity: by name, by a ParaView Calculator
expression, or the only vector; point data before cell data."""

import logging
import re

import numpy as np

from .._custom_types import PathLike
from .solvers import Step
from .vtk_blocks import vtk_errors

_log = logging.getLogger("flowkit")

_VELOCITY_NAMES = ("velocity", "u", "vel", "velocities", "v", "uvw", "flow", "velocityxyz")
"""Vector arrays named as a velocity: OpenFOAM's `U`, CGNS' and EnSight's `Velocity`, Exodus'
`vel`/`velocity`, ..."""
_COMPONENTS = (("sv_u", "sv_v", "sv_w"), ("u", "v", "w"))
"""Scalar arrays that are a velocity's components: Fluent's solution variables `SV_U`, `SV_V`,
`SV_W` (its CFF files), `u, v, w`; besides the spellings `_component_names` builds."""
_MOMENTUM = (("momentum", "density"), ("rhou", "rho"), ("rhovelocity", "density"))
"""A conserved momentum and its density (CGNS' `Momentum*` with `Density`, PLOT3D's `q`):
where a file holds these and no velocity, the velocity is momentum over density."""
_OTHER_MEANINGS = frozenset(
    {"force", "bf", "grad", "gradient", "vorticity", "normal", "normals", "coords", "coordinates", "displacement"}
    | {"acceleration", "stress", "shear", "flux", "momentum", "tcoords", "position", "points", "curl", "omega"}
    | {"magnitude", "mag", "tangent", "tangents", "wss", "traction", "heat"}
)
"""Words naming a vector that is not a velocity (body force `SV_BF_V`, gradients, normals,
vorticity, wall shear stress, ...): never taken as the only vector of a file."""


def is_expression(velocity: str) -> bool:
    """Whether a `velocity=` is a Calculator expression (`Momentum/Density`), not array names."""
    return any(ch in velocity for ch in "+-*/()^")


def _words(name: str) -> list[str]:
    """A name's words, lower case, units in brackets dropped: `velocity_liq (m/s)` -> velocity, liq."""
    return [w for w in re.split(r"[^a-z0-9]+", re.sub(r"[(\[].*?[)\]]", "", name.lower())) if w]


def velocity_by_meaning(point_arrays: dict, cell_arrays: dict, path, keep_cells: bool = False) -> str:
    """The velocity among a file's arrays (name: components), by what solvers call it, point data
    first (cell data first with `keep_cells`):

    1. a vector named as a velocity (`U`, `Velocity`, `vel`), or whose first word is one
       (`velocity_liq (m/s)`);
    2. scalar components (Fluent's `SV_U`, `SV_V`, `SV_W`; `u, v, w`; `VelocityX`, `X_VELOCITY`,
       ...), as `"SV_U,SV_V,SV_W"`;
    3. momentum over density (`"Momentum/Density"`, logged);
    4. the only vector, unless its name says it is something else (`SV_BF_V`, `Normals`, ...).

    Two candidates equally plausible, or none, are refused in one line listing the arrays and
    naming `velocity=`."""
    order = (cell_arrays, point_arrays) if keep_cells else (point_arrays, cell_arrays)
    for rule in (_named_vector, _component_names, _momentum, _only_vector):
        for arrays in order:
            found = rule(arrays, path)
            if found is not None:
                return found
    raise ValueError(
        f"{path}: no array is a velocity by its name; point arrays {point_arrays}, cell arrays {cell_arrays} "
        "(name: components). A velocity is a vector named U, Velocity or vel, components SV_U, SV_V, SV_W or "
        "u, v, w, or Momentum with Density; pass velocity=NAME"
    )


def _named_vector(arrays: dict, path) -> str | None:
    """A vector named like a velocity (`U`, `Velocity`), else whose first word is one."""
    vectors = [n for n, c in arrays.items() if c in (2, 3)]
    exact = [n for key in _VELOCITY_NAMES for n in vectors if n.lower() == key]
    if exact:
        return exact[0]
    worded = [n for n in vectors if _words(n)[:1] and _words(n)[0] in _VELOCITY_NAMES]
    if len(worded) > 1:
        raise ValueError(f"{path}: several vector arrays are named like a velocity: {worded}; pass velocity=NAME")
    return worded[0] if worded else None


def _momentum(arrays: dict, path) -> str | None:
    """`"Momentum/Density"` where the arrays hold a momentum vector and its density."""
    names = {name.lower(): name for name in arrays}
    for momentum, density in _MOMENTUM:
        if arrays.get(names.get(momentum)) == 3 and arrays.get(names.get(density)) == 1:
            expression = f"{names[momentum]}/{names[density]}"
            _log.info(
                "%s: no velocity array; the velocity is %s (momentum over density, as a compressible solver writes)",
                path,
                expression,
            )
            return expression
    return None


def _only_vector(arrays: dict, path) -> str | None:
    """The only vector array, unless its name says it is something else."""
    vectors = [n for n, c in arrays.items() if c in (2, 3) and not set(_words(n)) & _OTHER_MEANINGS]
    if len(vectors) > 1:
        raise ValueError(f"{path}: several vector arrays {vectors}, none named like a velocity; pass velocity=NAME")
    return vectors[0] if vectors else None


def _component_names(arrays: dict, path=None) -> str | None:
    """Scalar arrays that are a velocity's components, as `"U,V,W"`: Fluent's `SV_U, SV_V, SV_W`,
    `u, v, w`, `velocity_x, ..._y[, ..._z]` with any separator (`VelocityX`, `vel x`, `vx`), or
    axis first as Fluent's ASCII files write them (`X_VELOCITY`, `x-velocity`), or None."""
    scalars = {name.lower(): name for name, width in arrays.items() if width == 1}
    separators = ("", "_", " ", "-", ".")
    candidates = list(_COMPONENTS) + [
        tuple(f"{base}{sep}{axis}" for axis in "xyz") for base in ("velocity", "vel", "v", "u") for sep in separators
    ]
    candidates += [tuple(f"{axis}{sep}{base}" for axis in "xyz") for base in ("velocity", "vel") for sep in separators]
    for names in candidates:
        if names[0] in scalars and names[1] in scalars:
            return ",".join(scalars[n] for n in names if n in scalars)
    return None


def _on_points(data):
    """`data` with every cell-only array also as point data (`vtkCellDataToPointData`: each point
    gets the mean of the cells around it); point arrays kept as they are."""
    from vtkmodules.vtkFiltersCore import vtkCellDataToPointData

    converter = vtkCellDataToPointData()
    converter.SetInputData(data)
    converter.Update()
    out = data.NewInstance()
    out.ShallowCopy(data)
    converted = converter.GetOutput().GetPointData()
    for i in range(converted.GetNumberOfArrays()):
        if not data.GetPointData().HasArray(converted.GetArrayName(i)):
            out.GetPointData().AddArray(converted.GetArray(i))
    return out


def _expression(data, path, expression: str, on_cells: bool) -> np.ndarray:
    """`(n, C)`: a ParaView Calculator expression over the data's arrays (`Momentum/Density`),
    evaluated by VTK's `vtkArrayCalculator` per cell (`on_cells`: over the cell arrays, as a
    cell-centred solver's velocity is its cell momentum over its cell density) or per node."""
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkFiltersCore import vtkArrayCalculator

    data = data if on_cells else _on_points(data)
    calc = vtkArrayCalculator()
    calc.SetInputData(data)
    if on_cells:
        calc.SetAttributeTypeToCellData()
    else:
        calc.SetAttributeTypeToPointData()
    attributes = data.GetCellData() if on_cells else data.GetPointData()
    for i in range(attributes.GetNumberOfArrays()):
        name, width = attributes.GetArrayName(i), attributes.GetArray(i).GetNumberOfComponents()
        if width == 1:
            calc.AddScalarArrayName(name)
        elif width == 3:
            calc.AddVectorArrayName(name)
    calc.SetFunction(expression)
    calc.SetResultArrayName("flowkit velocity expression")
    with vtk_errors(
        path,
        f"velocity expression {expression!r} does not evaluate over the arrays "
        f"{[attributes.GetArrayName(i) for i in range(attributes.GetNumberOfArrays())]}",
    ):
        calc.Update()
    output = calc.GetOutput()
    result = (output.GetCellData() if on_cells else output.GetPointData()).GetArray("flowkit velocity expression")
    if result is None:
        raise ValueError(f"{path}: velocity expression {expression!r} gave no result")
    rows = data.GetNumberOfCells() if on_cells else data.GetNumberOfPoints()
    return np.asarray(vtk_to_numpy(result), dtype=np.float64).reshape(rows, -1)


def _expression_arrays(data, path, expression: str, point_arrays: dict, cell_arrays: dict, keep_cells: bool):
    """`(values, on_cells)` of an expression: over the cells where all its arrays are cell
    arrays (then moved to the points by `vtkCellDataToPointData` unless `keep_cells`), else over
    the points."""
    from vtkmodules.util.numpy_support import numpy_to_vtk

    named = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expression)) & (set(point_arrays) | set(cell_arrays))
    if not named or not named.isdisjoint(point_arrays):
        return _expression(data, path, expression, on_cells=False), False
    values = _expression(data, path, expression, on_cells=True)
    if keep_cells:
        return values, True
    holder = data.NewInstance()
    holder.ShallowCopy(data)
    column = numpy_to_vtk(values, deep=True)
    column.SetName("flowkit velocity expression")
    holder.GetCellData().AddArray(column)
    return _values(
        _on_points(holder).GetPointData().GetArray("flowkit velocity expression"), data.GetNumberOfPoints()
    ), False


def _values(array, rows: int) -> np.ndarray:
    """A VTK data array as `(rows, C)` NumPy values, copied, in the file's floating precision
    (a float32 series is not widened: for the brief's 40 files that was 90 MB of the read's
    peak); integer arrays become float64."""
    from vtkmodules.util.numpy_support import vtk_to_numpy

    values = vtk_to_numpy(array)
    return np.array(values, dtype=values.dtype if np.issubdtype(values.dtype, np.floating) else np.float64).reshape(
        rows, -1
    )


def vector_arrays(data, path: PathLike | Step, velocity: str | None, keep_cells: bool = False):
    """`(values, name, on_cells)`: the velocity as `(n_points, C)` point data in the file's
    floating precision, or with `keep_cells` and the velocity among the cell arrays, per cell
    `(n_cells, C)`, `on_cells` true. `velocity` is an array's name, scalar components
    (`"U,V,W"`), an expression over the arrays (`Momentum/Density`), or None
    (`velocity_by_meaning`). Cell data
    used at the points goes through `vtkCellDataToPointData`."""

    def listing(attributes):
        return {
            attributes.GetArrayName(i): attributes.GetArray(i).GetNumberOfComponents()
            for i in range(attributes.GetNumberOfArrays())
        }

    point_arrays, cell_arrays = listing(data.GetPointData()), listing(data.GetCellData())
    if velocity is None:
        velocity = velocity_by_meaning(point_arrays, cell_arrays, path, keep_cells)
    if "," in velocity:  # components in scalar arrays, "U,V,W"
        parts = [vector_arrays(data, path, name.strip(), keep_cells) for name in velocity.split(",")]
        if any(values.shape[1] != 1 for values, _, _ in parts) or len({on for _, _, on in parts}) > 1:
            raise ValueError(
                f"{path}: velocity {velocity!r} must name scalar arrays all on the points or all on the cells"
            )
        return np.concatenate([values for values, _, _ in parts], axis=1), velocity, parts[0][2]
    if keep_cells and velocity in cell_arrays:
        return _values(data.GetCellData().GetArray(velocity), data.GetNumberOfCells()), velocity, True
    if velocity in point_arrays:
        return _values(data.GetPointData().GetArray(velocity), data.GetNumberOfPoints()), velocity, False
    if velocity in cell_arrays:
        return _values(_on_points(data).GetPointData().GetArray(velocity), data.GetNumberOfPoints()), velocity, False
    if is_expression(velocity):
        values, on_cells = _expression_arrays(data, path, velocity, point_arrays, cell_arrays, keep_cells)
        return values, velocity, on_cells
    raise ValueError(
        f"{path}: no array named {velocity!r}; point arrays {point_arrays}, cell arrays "
        f"{cell_arrays} (name: components)"
    )
