"""Turning trajectories into pictures and numbers."""

from .plots import plot_pathlines as plot_pathlines
