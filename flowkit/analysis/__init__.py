"""What people study: FTLE, densities, residence and exit times, dispersion, sampling, plots, animations."""

from .animation import animate as animate
from .density import bandwidth_factor as bandwidth_factor, histogram as histogram, kde as kde, per_area as per_area
from .deposition import (
    DepositionMap as DepositionMap,
    Deposits as Deposits,
    deposition_map as deposition_map,
    deposits as deposits,
)
from .ftle import cauchy_green as cauchy_green, flow_map_jacobian as flow_map_jacobian, ftle as ftle
from .plots import (
    plot_density as plot_density,
    plot_ftle as plot_ftle,
    plot_oil_budget as plot_oil_budget,
    plot_pathlines as plot_pathlines,
    plot_scalar_map as plot_scalar_map,
    plot_snapshot as plot_snapshot,
)
from .sampling import sample as sample
from .statistics import (
    absolute_dispersion as absolute_dispersion,
    arrival_time as arrival_time,
    exit_time as exit_time,
    relative_dispersion as relative_dispersion,
    residence_time as residence_time,
)
