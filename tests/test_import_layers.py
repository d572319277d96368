"""The layers of sessionviewer/, written down once (LAYERS), and the imports between its
modules, read with ast, the ones inside functions included: no import circle, no import
up a layer, and no format's module imported outside readers/ (issue #30).

What is still wrong today is listed in the KNOWN_ lists, each naming its issue. A test
fails on a new violation and on a listed one that no longer occurs, so the lists only
shrink: when you fix one, delete its line.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sessionviewer import readers

PACKAGE = Path(__file__).resolve().parent.parent / "sessionviewer"

# Lowest first. A module may import its own layer and the layers below it, never one above.
# Each name is a top-level module or package of sessionviewer/ (the README's Layout).
LAYERS = (
    # plain Python, no Django: one module per format, owning all of that format's rules
    ("readers",),
    # plain Python over entries, words, prices and the Fluux memory files
    ("threads", "tokens", "render", "prices", "row_codec", "workspaces", "redaction", "collector"),
    # the settings, the roots to index, the tables, the database engines and permissions
    ("settings", "roots", "lookups", "models", "sqlite", "postgresql", "auth"),
    # the only code that calls the readers and writes rows
    ("index",),
    # what the pages show: threads from the index, search, lists, memory over time, links
    (
        "transcripts",
        "search",
        "filters",
        "tallies",
        "activity",
        "projects",
        "export",
        "links",
        "templatetags",
        "forms",
        "memory_index",
        "memory_timeline",
        "memory_findings",
        "workspace_pages",
        "workspace_records",
    ),
    # HTTP and commands
    ("views", "urls", "urls_workspaces", "middleware", "wsgi", "apps", "management", "migrations"),
)

# What every reader shares; every other module in readers/ belongs to one format.
SHARED_READERS = frozenset({"readers", "readers.files", "readers.agent_database"})

# Import circles not broken yet, each closed by an import inside a function.
KNOWN_CIRCLES: set[frozenset[str]] = set()

# (importer, imported) going up a layer.
KNOWN_UPWARD: set[tuple[str, str]] = set()

# (importer, format module) outside readers/: each should ask the session's format instead.
KNOWN_FORMAT_IMPORTS: set[tuple[str, str]] = set()


def module_files(package: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name below the package ("index.rows", "readers" for its __init__) -> (file,
    whether it is a package's __init__)."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = (path, is_package)
    return found


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its file. `import a.b` and
    `from a import b` name module a.b when there is one, else the nearest package above;
    relative imports are resolved; an imported package's __init__ counts only when it is
    what is named. Imports by importlib (readers.format_module) are not seen."""
    files = module_files(package)
    root = package.name

    def nearest(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in files.items():
        here = name.split(".") if name else []
        if not is_package:
            here = here[:-1]
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == root or alias.name.startswith(root + "."):
                        found.add(nearest(alias.name.removeprefix(root).lstrip(".")))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                elif node.module == root or (node.module or "").startswith(root + "."):
                    module = node.module.removeprefix(root).lstrip(".")
                else:
                    continue
                for alias in node.names:
                    whole = f"{module}.{alias.name}" if module else alias.name
                    found.add(whole if whole in files else nearest(module))
        found.discard(name)
        found.discard(None)
        found.discard("")  # the package's own __init__, which imports nothing
        graph[name] = found
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(frozenset(group))
    return found


def layer_of(module: str) -> int | None:
    top = module.split(".")[0]
    return next((n for n, names in enumerate(LAYERS) if top in names), None)


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(importer, imported) where the imported module's layer is above the importer's (a
    module without a layer fails test_every_module_has_a_layer)."""
    found = set()
    for module, targets in graph.items():
        for target in targets:
            here, there = layer_of(module), layer_of(target)
            if here is not None and there is not None and there > here:
                found.add((module, target))
    return found


def format_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    def of_a_format(name: str) -> bool:
        return name.startswith("readers.") and name not in SHARED_READERS

    return {
        (module, target)
        for module, targets in graph.items()
        if not module.startswith("readers")
        for target in targets
        if of_a_format(target)
    }


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE)


def test_every_module_has_a_layer(graph):
    assert sorted(m for m in graph if m and layer_of(m) is None) == []


def test_every_layer_name_is_a_module(graph):
    tops = {m.split(".")[0] for m in graph}
    assert sorted(name for names in LAYERS for name in names if name not in tops) == []


def test_every_format_of_the_registry_is_a_format_module(graph):
    assert sorted(f"readers.{name}" for name in readers.FORMATS if f"readers.{name}" not in graph) == []
    assert SHARED_READERS.isdisjoint(f"readers.{name}" for name in readers.FORMATS)


def test_no_new_import_circle(graph):
    assert sorted(sorted(group) for group in circles(graph) if group not in KNOWN_CIRCLES) == []


def test_no_known_circle_is_gone(graph):
    assert sorted(sorted(group) for group in KNOWN_CIRCLES - set(circles(graph))) == []


def test_no_new_import_up_a_layer(graph):
    assert sorted(upward_imports(graph) - KNOWN_UPWARD) == []


def test_no_known_upward_import_is_gone(graph):
    assert sorted(KNOWN_UPWARD - upward_imports(graph)) == []


def test_no_new_format_module_imported_outside_readers(graph):
    assert sorted(format_imports(graph) - KNOWN_FORMAT_IMPORTS) == []


def test_no_known_format_import_is_gone(graph):
    assert sorted(KNOWN_FORMAT_IMPORTS - format_imports(graph)) == []


# The walk itself, on a made-up package: what it must see.


def write_package(root: Path, files: dict[str, str]) -> Path:
    package = root / "sessionviewer"
    for name, text in files.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_a_circle_closed_inside_a_function_is_found(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "transcripts/__init__.py": "",
            "transcripts/store.py": "from sessionviewer.transcripts import flat\n",
            "transcripts/flat.py": "def later():\n    from . import store\n",
        },
    )
    assert circles(import_graph(package)) == [frozenset({"transcripts.store", "transcripts.flat"})]


def test_a_longer_circle_through_dotted_imports_is_found(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "import sessionviewer.b\n",
            "b.py": "from sessionviewer import c\n",
            "c.py": "from .a import thing\n",
            "d.py": "import sessionviewer.a\n",
        },
    )
    assert circles(import_graph(package)) == [frozenset({"a", "b", "c"})]


def test_relative_imports_resolve_from_a_package_and_from_a_module(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "models.py": "",
            "index/__init__.py": "from . import rows\n",
            "index/rows.py": "from ..models import Entry\nfrom .. import readers\n",
            "readers/__init__.py": "import os\n",
        },
    )
    graph = import_graph(package)
    assert graph["index"] == {"index.rows"}
    assert graph["index.rows"] == {"models", "readers"}


def test_an_import_up_a_layer_inside_a_function_is_found(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "readers/__init__.py": "def late():\n    import sessionviewer.views.pages\n",
            "views/__init__.py": "",
            "views/pages.py": "from sessionviewer import readers\n",
        },
    )
    assert upward_imports(import_graph(package)) == {("readers", "views.pages")}


def test_a_format_module_imported_outside_readers_is_found(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "readers/__init__.py": "from .files import open_regular\n",
            "readers/files.py": "",
            "readers/codex.py": "from sessionviewer import readers\n",
            "search.py": "from sessionviewer.readers import Entry, codex, files\n",
        },
    )
    assert format_imports(import_graph(package)) == {("search", "readers.codex")}
