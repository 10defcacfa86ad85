"""Where the gallery's real files are: `$FLOWKIT_EXAMPLE_DATA`, else `../shared/data` beside the
project: model and solver output as the models wrote it, each file's source and licence in the
READMEs there (`real/README.md`, `ocean-real/README.md`)."""

import os
import sys
from pathlib import Path


def shared(*parts: str) -> Path:
    """The path `parts` under the shared data folder; a script stops with one line naming it
    when it is not there."""
    root = Path(os.environ.get("FLOWKIT_EXAMPLE_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    path = root.joinpath(*parts)
    if not path.exists():
        sys.exit(f"{Path(sys.argv[0]).name}: {path} is not here (FLOWKIT_EXAMPLE_DATA names the shared data's folder)")
    return path
