"""Every ocean and atmosphere model flowkit reads, in one table.

`fk.io.read` and `fk.io.from_xarray` open a model's files lazily (one `xarray.Dataset` per file)
and ask each row of `MODELS` in turn whether they are its output (`Model.detect`, from the files'
own conventions); the first that says yes builds the field (`Model.build`). The CF gridded reader
is the last row and takes what the others leave. Adding a model is one module here (a `detect`
and a `build`) and one row below. The shared CF, time and grid helpers sit below this package
(`flowkit.io.cf`, `flowkit.io.cf_times`); nothing outside `flowkit.io` imports a model reader.
"""

from .. import cf
from . import fvcom, grid, mitgcm, mom6, nemo, pop, roms, telemac, ugrid, wrf
from .model import Model as Model

_NAMES = frozenset({"u", "v", "w"})

MODELS: tuple[Model, ...] = (
    Model("TELEMAC Selafin", telemac.detect, telemac.build, _NAMES | {"plane", "dtype"}),
    Model("ROMS/CROCO", roms.detect, roms.build, frozenset({"grid", "sample", "dtype"})),
    Model("NEMO", nemo.detect, nemo.build, _NAMES | {"grid", "dtype"}),
    Model("MITgcm", mitgcm.detect, mitgcm.build, _NAMES | {"face", "dtype"}),
    Model("WRF", wrf.detect, wrf.build, frozenset({"u", "v", "dtype"})),
    Model("POP", pop.detect, pop.build, frozenset({"u", "v", "dtype"})),
    Model("MOM6", mom6.detect, mom6.build, frozenset({"u", "v", "grid", "dtype"})),
    Model("FVCOM", fvcom.detect, fvcom.build, _NAMES | {"dtype"}),
    Model("unstructured (UGRID: SCHISM, ADCIRC, Delft3D-FM)", ugrid.detect, ugrid.build, _NAMES | {"dtype"}),
    Model(
        "CF gridded",
        grid.detect,
        grid.build,
        _NAMES
        | {"x", "y", "z", "time", "spherical", "land_value", "mask", "periodic", "interpolation"}
        | {"dtype", "stream", "max_device_bytes", "sample", "coast"},
    ),
)
"""The models in the order they are asked; the CF gridded reader, last, takes every dataset."""


def model_of(datasets: list) -> Model:
    """The first row of `MODELS` whose `detect` recognises `datasets`; files that two models
    recognise apart (an ADCIRC file among FVCOM's) are refused, each named with its model. Files
    no model but the CF reader takes (a grid file) go with the model of the others."""
    if len(datasets) > 1:
        by_model: dict = {}
        for ds in datasets:
            model = next(m for m in MODELS if m.detect([ds]))
            if model is not MODELS[-1]:
                by_model.setdefault(model.name, []).append(cf.where(ds))
        if len(by_model) > 1:
            raise ValueError(
                "the files are of different models: "
                + "; ".join(
                    f"{name}: {', '.join(files[:2])}{f' and {len(files) - 2} more' if len(files) > 2 else ''}"
                    for name, files in by_model.items()
                )
                + "; read each model's files apart"
            )
    return next(model for model in MODELS if model.detect(datasets))


def where(datasets: list) -> str:
    """The first dataset's file, for messages."""
    return cf.where(datasets[0])
