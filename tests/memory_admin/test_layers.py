"""The memory app's imports run one way: stores/ is plain Python, and nothing reaches into search or views."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "memory_admin"
STORES = sorted((APP / "stores").glob("*.py"))
MODULES = sorted(p for p in APP.rglob("*.py") if "migrations" not in p.parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import: level 0 is absolute, 1 is `.x`, 2 is `..x`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or ""))
    return found


@pytest.mark.parametrize("path", STORES, ids=lambda p: p.name)
def test_a_store_module_imports_no_django_and_nothing_of_the_app_outside_stores(path: Path) -> None:
    for level, module in imports(path):
        assert not (level == 0 and module.split(".")[0] in ("django", "ninja", "memory_admin")), module
        assert level <= 1, f"{path.name} reaches out of stores/ with {'.' * level}{module}"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(APP)))
def test_the_memory_app_never_imports_search_or_another_apps_views(path: Path) -> None:
    for level, module in imports(path):
        if level == 0:
            assert not module.startswith("tapeview.search"), module
            assert not (module.startswith("tapeview.") and module.endswith(".views")), module


def test_no_module_of_the_memory_app_is_longer_than_300_lines() -> None:
    long = {str(p.relative_to(APP)): n for p in MODULES if (n := len(p.read_text().splitlines())) > 300}
    assert long == {}
