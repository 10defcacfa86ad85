"""Where generated samples live: made once, into the cache directory, safely under concurrency."""

from pathlib import Path


def cache_root(cache_dir) -> Path:
    import os

    return Path(
        cache_dir or os.environ.get("FLOWKIT_DATA") or Path.home() / ".cache" / "flowkit" / "datasets"
    ).expanduser()


def generated(folder: Path, write) -> Path:
    """`folder`, made on first use by `write(folder_to_fill)` in a staging folder beside it and
    renamed into place: processes that need a sample at once (a parallel sweep, test workers)
    never read one half written; the first rename wins, the others are discarded."""
    import os
    import shutil
    import tempfile

    if folder.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        write(stage / folder.name)
        os.rename(stage / folder.name, folder)
    except OSError:
        if not folder.exists():
            raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return folder
