"""No test module imports another (STYLE.md, Tests): what several share lives in a helper
module under tests/ named for what it holds (users.py, demo_index.py, browser.py, ...), and a
shared fixture in conftest.py, where pytest finds it without an import. A test module
imported by another is loaded twice over, and its fixtures, imported by name, hide where
they come from."""

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
TEST_MODULES = {path.stem for path in TESTS.glob("test_*.py")}


def imported_test_modules(source: str) -> list[str]:
    """The test modules of tests/ that the Python source imports, as "line N: module"."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.ImportFrom) and node.level == 1:  # from tests/ itself
            module = f"tests.{node.module}" if node.module else "tests"
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            module = name.removeprefix("tests.").split(".")[0]
            if module in TEST_MODULES and f"line {node.lineno}: {module}" not in found:
                found.append(f"line {node.lineno}: {module}")
    return found


def test_no_module_under_tests_imports_a_test_module():
    modules = sorted(TESTS.glob("*.py"))
    assert len([path for path in modules if path.stem in TEST_MODULES]) > 50  # it looked at the suite
    offenders = {path.name: found for path in modules if (found := imported_test_modules(path.read_text()))}
    assert offenders == {}, "move what they share to a helper module under tests/ or to conftest.py"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("from tests import test_pages", 1),
        ("from tests import users, test_pages", 1),
        ("from tests.test_pages import page", 1),
        ("from . import test_pages", 1),
        ("from .test_pages import demo, page  # noqa: F401 - fixtures", 1),
        ("import tests.test_pages", 1),
        ("import tests.test_pages as pages", 1),
        ("def helper():\n    from .test_pages import page\n    return page", 2),  # inside a function too
    ],
)
def test_every_way_of_importing_a_test_module_is_found(source, line):
    assert imported_test_modules(source) == [f"line {line}: test_pages"]


@pytest.mark.parametrize(
    "source",
    [
        "from tests import users",
        "from .users import VIEWER, make_user",
        "from .conftest import SCREENSHOTS",
        "from django.test import Client",
        "import pytest",
        "from sessionviewer.index import index_roots",
    ],
)
def test_helper_modules_and_libraries_may_be_imported(source):
    assert imported_test_modules(source) == []
