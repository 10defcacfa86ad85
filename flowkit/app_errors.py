"""What the apps do around Hydra: a config mistake, a bad value, a missing file, an output
folder that cannot be written or holds another run's results each end the run with one line
naming it and exit status 2, not a traceback."""

import contextlib
import dataclasses
import logging
import math
import os
import signal
import sys
import threading
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.errors import InstantiationException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from .config import FtleConfig, TrackConfig
from .tracker.interrupt import ctrl_c_noted

_log = logging.getLogger("flowkit")

_USER_ERRORS = (
    ValueError,
    TypeError,
    OSError,
    MemoryError,
    InstantiationException,
    OmegaConfBaseException,
)  # OSError: missing or existing files, a full disk; MemoryError: a run that would not fit


def check_overrides(argv, config_name: str, conf: Path = Path(__file__).resolve().parents[1] / "conf") -> None:
    """Before Hydra composes the run: an override naming a key or a group option that does not
    exist ends the run with one line naming the closest valid one (`seed.n=500` -> `seeds.n`),
    exit status 2, instead of Hydra's several lines. So does one that adds a key the config
    lacks (`+key=value`, `++key=value`) or sets Hydra's own keys (`_target_`, `_convert_`), which
    would make the run build (and import, and call) something else."""
    import difflib

    _check_grammar(argv)
    groups = {d.name: sorted(f.stem for f in d.glob("*.yaml")) for d in conf.iterdir() if d.is_dir()}
    main = OmegaConf.load(conf / f"{config_name}.yaml")
    chosen = {k: v for item in main.get("defaults", []) if isinstance(item, DictConfig) for k, v in item.items()}
    overrides = []
    for arg in argv:  # `key=value`, `+key=value`, `++key=value`, `~key[=value]`
        if arg.startswith("-") or ("=" not in arg and not arg.startswith("~")):
            continue
        key, _, value = arg.lstrip("+~").partition("=")
        if key.startswith("hydra"):
            continue
        if arg.startswith("~") and key not in groups:
            _refuse(f"{arg}: a key is not removed from the run; give {key}=null for no value (or its default)")
        if any(part.startswith("_") for part in key.split(".")):
            _refuse(
                f"{arg}: {key.rsplit('.', 1)[-1]} is not a setting; what a run builds comes from the config "
                "groups (choose an option, e.g. field=vtk) and their keys"
            )
        overrides.append((key, value))
    for key, value in overrides:
        if key in groups:
            for option in value.split(","):
                if option not in groups[key]:
                    _refuse(f"{key}={option}: no such option; choose one of {', '.join(groups[key])}")
            chosen[key] = value.split(",")[0]
    schema = TrackConfig if config_name == "track" else FtleConfig
    known = {f.name for f in dataclasses.fields(schema) if f.name not in groups}
    known |= set(_dotted({k: v for k, v in OmegaConf.to_container(main).items() if k != "defaults"}))
    types = {f.name: f.type for f in dataclasses.fields(schema)}
    for group, option in chosen.items():
        if group in groups and option in groups[group]:
            options = OmegaConf.to_container(OmegaConf.load(conf / group / f"{option}.yaml"))
            known |= {f"{group}.{k}" for k in _dotted(options)}
            types |= {f"{group}.{k}": kind for k, kind in _typed(options).items()}
    for key, value in overrides:
        if key in types:
            _check_type(key, value, types[key])
    for key, value in overrides:
        if key not in groups and key not in known:
            head, dot, rest = key.partition(".")
            group = difflib.get_close_matches(head, sorted(groups), n=1, cutoff=0.6)  # feild=vtk, sead.n=5
            near = (
                [f"{group[0]}{dot}{rest}" + ("" if dot else f"={value}")]
                if group and (not dot or f"{group[0]}.{rest}" in known)
                else difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.5)
            )
            _refuse(
                f"{key}: no such key in the {config_name} config"
                + (f"; did you mean {near[0]}?" if near else "")
                + " (the keys are those of conf/, with or without + or ++)"
            )


CHOICES = {"dtype": ("float32", "float64")}
"""Keys of the schema that take one of a few words."""


def _check_grammar(argv) -> None:
    """Each override as Hydra's grammar reads it, before anything is made: one line naming the
    one it cannot read (a path with spaces or letters beyond ASCII, unquoted; a newline)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    parser = OverridesParser.create()
    for arg in argv:
        if arg.startswith("-"):
            continue
        try:
            parser.parse_overrides([arg])
        except OverrideParseException:
            key = arg.partition("=")[0]
            _refuse(
                f"{arg!r}: Hydra's override grammar cannot read it; quote the value ({key}='...') where it holds "
                "spaces or letters beyond ASCII, and give no newline"
            )


def _typed(options: dict, prefix: str = "") -> dict:
    """The keys of a group option whose defaults are numbers or booleans, with that type (a
    number for either kind of number: a float setting given as 1 stays valid)."""
    kinds: dict = {}
    for k, v in options.items():
        if isinstance(v, dict):
            kinds |= _typed(v, f"{prefix}{k}.")
        elif isinstance(v, bool):
            kinds[prefix + k] = bool
        elif isinstance(v, (int, float)) and not k.startswith("_"):
            kinds[prefix + k] = float
    return kinds


def _check_type(key: str, value: str, kind) -> None:
    """One line for a value a typed key of the schema cannot take (Hydra's own is six lines)."""
    if key in CHOICES and not any(mark in value for mark in ("(", "${", "[")):
        wrong = [item for item in value.split(",") if item.strip() not in CHOICES[key]]
        if wrong:
            _refuse(f"{key}={wrong[0]}: {key} takes one of {', '.join(CHOICES[key])}")
    takes = {int: "an integer", float: "a number", bool: "true or false"}
    base = next((t for t in takes if kind in (t, t | None)), None)
    if base is None or any(mark in value for mark in ("(", "${", "[")):  # a sweep's range(...), an interpolation
        return
    for item in value.split(","):  # a sweep's values
        item = item.strip()
        if kind is not base and item.lower() in ("null", "none", "~"):
            continue
        try:
            if base is bool:
                ok = item.lower() in ("true", "false", "yes", "no", "on", "off", "1", "0")
            elif base is int:
                ok = int(item) == int(item)  # "nan", "1e9", "2.5" raise
            else:
                ok = math.isfinite(float(item))
        except ValueError:
            ok = False
        if not ok:
            _refuse(f"{key}={item}: {key} takes {takes[base]}{' (or null)' if kind is not base else ''}")


RESULTS = ("summary.json", "sweep_summary.csv")
"""Files that mark a folder as holding a finished run's (or sweep's) results."""


def check_output_folder(argv) -> None:
    """Before Hydra configures its log file there: the output folder (`hydra.run.dir=` or
    `hydra.sweep.dir=`; else the folder Hydra makes `outputs/` in, here) can be made and written,
    and holds no other run's results (unless `overwrite=true`), or the run ends with one line
    naming it. (The default folders are stamped to the microsecond: each run gets its own.)"""
    import tempfile

    given = [a.split("=", 1)[1] for a in argv if a.startswith(("hydra.run.dir=", "hydra.sweep.dir="))]
    folder = Path(given[0]) if given and "${" not in given[0] else None
    overwrite = any(a.lower() in ("overwrite=true", "overwrite=1", "overwrite=yes") for a in argv)
    if folder is not None and not overwrite:
        taken = [name for name in RESULTS if (folder / name).exists()] + [
            str(p.relative_to(folder)) for p in folder.glob("*/summary.json")
        ]
        if taken:
            _refuse(
                f"output folder {folder} holds another run's results ({', '.join(sorted(taken)[:3])}); "
                "give a new hydra.run.dir (or hydra.sweep.dir), or overwrite=true to replace them"
            )
    folder = folder or Path.cwd()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as err:
        _refuse(
            f"output folder {folder} cannot be written ({err.strerror or err}); give hydra.run.dir= a "
            "folder you can write"
        )


def _dotted(tree, prefix="") -> list[str]:
    keys = []
    for k, v in tree.items():
        if k.startswith("_"):
            continue
        keys.append(prefix + k)
        if isinstance(v, dict):
            keys += _dotted(v, prefix + k + ".")
    return keys


def _to_log_file(message: str) -> None:
    """`message` as an ERROR line in the run's log files only (the console shows `error: ...`)."""
    record = _log.makeRecord(_log.name, logging.ERROR, __file__, 0, message, None, None)
    for handler in logging.getLogger().handlers + _log.handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handle(record)


def _refuse(message: str, status: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(status)


def _exit_now(status: int) -> None:
    """Exit with `status` once the logs are written, without the interpreter's teardown: a
    Ctrl-C can leave XLA's compiler or a reader's threads running, and tearing the interpreter
    down under them crashed (a segfault, exit -11)."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _terminated(signum, frame) -> None:
    """SIGTERM (a scheduler's end of the job, `kill`): said in the log and on stderr, what was
    kept named, then the process ends at once (status 143) as the signal would have ended it."""
    store = Path(HydraConfig.get().runtime.output_dir) / "trajectories.zarr" if HydraConfig.initialized() else None
    kept = (
        f"the batches finished are in {store}; resume=true (with this hydra.run.dir) continues the run"
        if store is not None and store.exists()
        else "nothing of the run was kept (output.store=true keeps each finished batch)"
    )
    message = f"terminated (SIGTERM): {kept}"
    _log.error("%s", message)
    print(f"\nerror: {message}", file=sys.stderr, flush=True)
    _exit_now(128 + signal.SIGTERM)


@contextlib.contextmanager
def user_errors():
    """Inside an app: a bad value, a missing file or an unknown option ends the run with one
    line on stderr and exit status 2, not a traceback; `HYDRA_FULL_ERROR=1` shows the traceback.
    Python warnings (from flowkit's dependencies) go to the run's log like flowkit's own lines."""
    logging.captureWarnings(True)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        with ctrl_c_noted() as noted:  # a Ctrl-C swallowed while reading is raised by the run, or here
            yield
            if noted:
                raise KeyboardInterrupt
    except _USER_ERRORS as err:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        cause = err.__cause__ if isinstance(err, InstantiationException) and err.__cause__ is not None else err
        message = " ".join(str(cause).split())
        _to_log_file(f"{type(cause).__name__}: {message}")  # the run's log keeps its error; the console, one line
        _refuse(message)
    except KeyboardInterrupt as err:  # Ctrl-C, while reading, compiling or tracking
        message = str(err) or "interrupted before tracking began (reading the data or compiling): nothing was written"
        if "resume=True" in message:
            again = [a for a in sys.argv if not a.startswith(("hydra.run.dir=", "resume="))]
            message += (
                f"; here: python {' '.join(again)} hydra.run.dir={HydraConfig.get().runtime.output_dir} resume=true"
            )
        _log.error("%s", message)
        # on a line of its own: a progress bar may have been drawn as the Ctrl-C struck, its line open
        print(f"\nerror: {message}", file=sys.stderr, flush=True)
        _exit_now(130)
    except BaseException:
        _log.exception("the run failed")
        raise
