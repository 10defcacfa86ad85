"""The gallery, built with the site (an MkDocs hook): every script in `examples/` runs in its own
process, in a folder of its own under `.gallery/` where it writes its pictures and movies, and
becomes a page: the script's docstring as its text, what it printed, its pictures and movies, and
its code. A script that fails fails the build, with the end of its output. A script runs again
when it, the data helper or any file of `flowkit/` changed since its last run."""

import ast
import logging
import os
import subprocess
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
RUNS = ROOT / ".gallery"
PICTURES = (".png", ".gif")
MOVIES = (".mp4",)
TIMEOUT = 600

_log = logging.getLogger("mkdocs.gallery")


def scripts() -> list[Path]:
    """The gallery's scripts, in the order of their names."""
    return sorted(p for p in EXAMPLES.glob("*.py") if not p.name.startswith("_"))


def title_and_text(script: Path) -> tuple[str, str]:
    """A script's docstring: its first line the title, the rest the page's text."""
    docstring = ast.get_docstring(ast.parse(script.read_text())) or ""
    title, _, text = docstring.partition("\n")
    if not title:
        raise PluginError(f"gallery: {script.relative_to(ROOT)} has no docstring to title its page")
    return title.strip(), text.strip()


def on_config(config):
    """The gallery's pages in the navigation, in place of its `gallery/index.md` entry."""
    pages = [{"Overview": "gallery/index.md"}] + [{title_and_text(s)[0]: f"gallery/{s.stem}.md"} for s in scripts()]
    for entry in config["nav"]:
        if isinstance(entry, dict) and entry.get("Gallery") == "gallery/index.md":
            entry["Gallery"] = pages
    return config


def on_files(files, config):
    """Each script run (or its last run taken), its outputs and page added to the site's files."""
    cards = []
    library = max(p.stat().st_mtime for p in [EXAMPLES / "_data.py", *(ROOT / "flowkit").rglob("*.py")])
    for script in scripts():
        folder = _run(script, max(library, script.stat().st_mtime))
        title, text = title_and_text(script)
        outputs = sorted(p for p in folder.iterdir() if p.suffix in PICTURES + MOVIES)
        for output in outputs:
            files.append(File.generated(config, f"gallery/{script.stem}/{output.name}", abs_src_path=str(output)))
        page = _page(script, title, text, (folder / "output.txt").read_text(), outputs, config["use_directory_urls"])
        files.append(File.generated(config, f"gallery/{script.stem}.md", content=page))
        pictures = [p for p in outputs if p.suffix in PICTURES]
        cards.append((script.stem, title, pictures[0].name if pictures else None))
    files.append(File.generated(config, "gallery/index.md", content=_index(cards)))
    return files


def _run(script: Path, changed: float) -> Path:
    """The script's folder, the script run there unless its output is newer than `changed`."""
    folder = RUNS / script.stem
    done = folder / "output.txt"
    if done.exists() and done.stat().st_mtime > changed:
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    env = {"MPLBACKEND": "Agg", "JAX_COMPILATION_CACHE_DIR": str(Path.home() / ".cache/flowkit/jax-gallery")}
    _log.info("gallery: running %s", script.relative_to(ROOT))
    try:
        ran = subprocess.run(
            [sys.executable, str(script)],
            cwd=folder,
            env={**env, **os.environ},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired as error:
        raise PluginError(f"gallery: {script.relative_to(ROOT)} ran past {TIMEOUT} s") from error
    if ran.returncode != 0:
        tail = "\n".join((ran.stdout + ran.stderr).splitlines()[-25:])
        raise PluginError(f"gallery: {script.relative_to(ROOT)} failed (exit status {ran.returncode}):\n{tail}")
    done.write_text(ran.stdout)
    return folder


def _page(script: Path, title: str, text: str, printed: str, outputs: list[Path], directory_urls: bool) -> str:
    here = "" if directory_urls else f"{script.stem}/"  # raw HTML links are not rewritten by MkDocs
    parts = [f"# {title}", "", text, ""]
    for output in outputs:
        if output.suffix in MOVIES:
            parts += [f'<video controls loop muted playsinline width="100%" src="{here}{output.name}"></video>', ""]
        else:
            parts += [f"![{output.stem.replace('_', ' ')}]({script.stem}/{output.name})", ""]
    if printed.strip():
        parts += ["What it printed:", "", "```text", printed.rstrip(), "```", ""]
    code = script.read_text().rstrip()
    parts += [f"The script, `examples/{script.name}`:", "", "```python", code, "```", ""]
    return "\n".join(parts)


def _index(cards: list[tuple[str, str, str | None]]) -> str:
    parts = [
        "# Gallery",
        "",
        "Each example is a script in `examples/` that runs on a real model or solver file (the",
        "shared data's READMEs give each file's source and licence) or on a sample flowkit writes",
        "itself; the site is built by running them, so every picture and movie here is what the",
        "script makes today. Run one yourself with `python examples/<name>.py` in an empty folder:",
        "its files are written there.",
        "",
        '<div class="grid cards" markdown>',
        "",
    ]
    for stem, title, picture in cards:
        thumbnail = f"\n\n    ![{title}]({stem}/{picture})" if picture else ""
        parts += [f"-   **[{title}]({stem}.md)**{thumbnail}", ""]
    parts += ["</div>", ""]
    return "\n".join(parts)
