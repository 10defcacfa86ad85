"""The documentation site's sources: every public name of flowkit has its API entry, every page
the navigation names exists, every gallery script titles its page (`mkdocs build --strict`, run
by CI with the gallery's scripts, checks the rest: links, references, the scripts' runs)."""

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NAMESPACES = {
    "fields": ["flowkit.fields"],
    "io": ["flowkit.io", "flowkit.io.ocean"],
    "boundaries": ["flowkit.boundaries"],
    "integrators": ["flowkit.integrators"],
    "diffusion": ["flowkit.diffusion"],
    "particles": ["flowkit.particles"],
    "oil": ["flowkit.oil", "flowkit.oil.records", "flowkit.oil.weathering"],
    "seeding": ["flowkit.seeding"],
    "statistics": ["flowkit.statistics"],
    "analysis": ["flowkit.analysis"],
    "datasets": ["flowkit.datasets"],
}


def public_names(namespace: str) -> set[str]:
    """The classes and functions a namespace offers: its own (defined in it or below it), and in
    `flowkit.io` those it re-exports from elsewhere in flowkit."""
    module = importlib.import_module(namespace)
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        home = getattr(value, "__module__", "")
        if (
            home == namespace
            or home.startswith(namespace + ".")
            or (namespace == "flowkit.io" and home.startswith("flowkit"))
        ):
            names.add(name)
    return names


def api_entries() -> dict[str, set[str]]:
    """Each API page's `::: name` entries."""
    pages = (ROOT / "docs" / "api").glob("*.md")
    return {p.stem: set(re.findall(r"^::: ([\w.]+)$", p.read_text(), flags=re.M)) for p in pages}


@pytest.mark.parametrize("page", sorted(NAMESPACES))
def test_every_public_name_has_its_api_entry(page):
    entries = api_entries()[page]
    for namespace in NAMESPACES[page]:
        missing = {f"{namespace}.{n}" for n in public_names(namespace)} - entries
        assert not missing, f"docs/api/{page}.md lacks {sorted(missing)}"
    for entry in entries:  # and each entry names something that is there
        module, _, name = entry.rpartition(".")
        assert hasattr(importlib.import_module(module), name), entry


def test_every_name_at_the_top_level_has_an_api_entry():
    import flowkit

    documented = {entry.rpartition(".")[2] for entries in api_entries().values() for entry in entries}
    offered = {
        n for n, v in vars(flowkit).items() if not n.startswith("_") and (inspect.isclass(v) or inspect.isfunction(v))
    }
    assert offered - documented == set()


def _pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for v in nav.values() for p in _pages(v)]
    return [p for item in nav for p in _pages(item)]


def test_every_page_of_the_navigation_exists():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    pages = _pages(config["nav"])
    assert "gallery/index.md" in pages  # made by the gallery's hook
    for page in pages:
        assert page == "gallery/index.md" or (ROOT / "docs" / page).is_file(), page
    assert (ROOT / config["hooks"][0]).is_file()


def test_every_gallery_script_titles_its_page_and_runs_on_its_own():
    scripts = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    assert len(scripts) >= 10
    for script in scripts:
        docstring = ast.get_docstring(ast.parse(script.read_text()))
        assert docstring and len(docstring.splitlines()) > 2, f"{script.name}: a title and a text"


def _resolves(dotted: str) -> bool:
    """Whether `flowkit.a.b.c` names a module or an attribute of one."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


def test_the_architecture_map_names_what_exists():
    """Every file and folder `docs/architecture.md` names (`read.py`, `io/ocean/`, ...) is in the
    project, and every `fk.` or `flowkit.` name it gives resolves."""
    text = re.sub(r"```.*?```", "", (ROOT / "docs" / "architecture.md").read_text(), flags=re.S)
    names = set(re.findall(r"`([^`\n]+)`", text))
    tops = [p for p in ROOT.iterdir() if p.name not in {".git", ".venv", "site"}]
    present = {str(p.relative_to(ROOT)) for top in tops for p in [top, *(top.rglob("*") if top.is_dir() else [])]}
    paths = {n.rstrip("/") for n in names if re.fullmatch(r"[\w./-]+\.(py|cc|h|md|yaml|toml)|[\w/-]+/", n)}
    assert len(paths) > 50  # the map names the layout
    missing = sorted(p for p in paths if not any(q == p or q.endswith("/" + p) for q in present))
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"
    dotted = {m[2] for n in names if (m := re.fullmatch(r"(fk|flowkit)((?:\.\w+)+)(?:\(.*\))?", n))}
    unresolved = sorted(d for d in dotted if not _resolves("flowkit" + d))
    assert dotted and not unresolved, f"docs/architecture.md names what flowkit does not have: {unresolved}"
