"""FTLE map of a field: `python apps/ftle.py [field=...] [T=-15] [resolution=[500,250]] [method=fd]`."""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

import flowkit
from flowkit.app_errors import check_output_folder, check_overrides, user_errors
from flowkit.config import run_ftle


@hydra.main(config_path="../conf", config_name="ftle", version_base="1.3")
def main(cfg: DictConfig) -> None:
    with user_errors():
        run_ftle(cfg)


if __name__ == "__main__":
    flowkit.configure()  # one CPU device per core, before JAX starts
    check_overrides(sys.argv[1:], "ftle", Path(__file__).resolve().parents[1] / "conf")
    check_output_folder(sys.argv[1:])
    main()
