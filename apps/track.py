"""Track particles through a velocity field: `python apps/track.py [group=option ...] [key=value ...]`."""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

import flowkit
from flowkit.app_errors import check_output_folder, check_overrides, user_errors
from flowkit.config import run_track


@hydra.main(config_path="../conf", config_name="track", version_base="1.3")
def main(cfg: DictConfig) -> None:
    with user_errors():
        run_track(cfg)


if __name__ == "__main__":
    flowkit.configure()  # one CPU device per core, before JAX starts
    check_overrides(sys.argv[1:], "track", Path(__file__).resolve().parents[1] / "conf")
    check_output_folder(sys.argv[1:])
    main()
