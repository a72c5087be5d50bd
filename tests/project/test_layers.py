"""The house rule of docs/architecture.md: imports run one way."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = sorted(
    p
    for top in ("tapeview", "memory_admin")
    for p in (ROOT / top).rglob("*.py")
    if "migrations" not in p.parts and "demodata" not in p.parts
)
# Each layer and what it must never import (absolute module prefixes).
FORBIDDEN = {
    "tapeview/sources/": (
        "django",
        "ninja",
        "tapeview.tapes",
        "tapeview.accounts",
        "tapeview.search",
        "memory_admin",
    ),
    "memory_admin/stores/": (
        "django",
        "ninja",
        "tapeview.tapes",
        "tapeview.accounts",
        "tapeview.search",
        "memory_admin",
    ),
    "tapeview/accounts/": ("tapeview.tapes", "tapeview.search", "memory_admin"),
    "tapeview/outbox/": ("tapeview.tapes", "tapeview.search", "memory_admin", "tapeview.reviews"),
    "tapeview/tapes/": ("tapeview.search", "memory_admin", "tapeview.accounts.views", "tapeview.otlp"),
    "tapeview/reviews/": (
        "tapeview.search",
        "memory_admin",
        "tapeview.tapes.views",
        "tapeview.accounts.views",
    ),
    "tapeview/alerts/": (
        "tapeview.search",
        "memory_admin",
        "tapeview.tapes.views",
        "tapeview.accounts.views",
    ),
    "memory_admin/": ("tapeview.search", "tapeview.accounts.views", "tapeview.tapes.views"),
    "tapeview/otlp/": ("tapeview.search", "memory_admin", "tapeview.tapes.views", "tapeview.accounts"),
    "tapeview/search/": ("tapeview.tapes.views", "tapeview.accounts.views", "memory_admin.views"),
    # The MCP tools call the API's endpoints, as the API does its domain functions: never a page's view.
    "tapeview/mcp/": ("tapeview.tapes.views", "tapeview.accounts.views", "memory_admin.views"),
    # Told the search lag through tapes' signal: metrics work with search left out.
    "tapeview/metrics/": (
        "tapeview.search",
        "memory_admin",
        "tapeview.tapes.views",
        "tapeview.accounts.views",
        "tapeview.outbox.views",
    ),
}


def imported(path: Path) -> list[str]:
    """Every module a file imports, deferred imports included, relative ones made absolute."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found += [module] + [f"{module}.{alias.name}" for alias in node.names]
    return found


@pytest.mark.parametrize("path", CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_run_one_way(path: Path) -> None:
    rel = str(path.relative_to(ROOT))
    layers = [layer for layer in FORBIDDEN if rel.startswith(layer)]
    if not layers:
        return
    layer = layers[0]  # the most specific layer is listed first
    own = layer.rstrip("/").replace("/", ".")
    for module in imported(path):
        if module == own or module.startswith(own + "."):
            continue
        assert not any(module == b or module.startswith(b + ".") for b in FORBIDDEN[layer]), (
            f"{rel}: {module}"
        )
