"""docs/architecture.md is a true map: it names every module and static file, and what it names exists."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "docs" / "architecture.md"
HEADING = re.compile(r"^### `([^`]+/)`")
ROW = re.compile(r"^\| `([^`]+)` \|")
TICKED = re.compile(r"`([^`\s]+)`")
FILE = re.compile(r"\.(py|md|c|h|html|css|js|svg|json|jsonl)$")


@cache
def code_files() -> tuple[str, ...]:
    found = []
    for top in ("tapeview", "memory_admin"):
        for path in (ROOT / top).rglob("*"):
            if "migrations" in path.parts or "__pycache__" in path.parts:
                continue
            if path.suffix in (".c", ".h") or (path.suffix == ".py" and path.read_text().strip()):
                found.append(str(path.relative_to(ROOT)))
    return tuple(sorted(found))


def named_rows() -> list[str]:
    """Every path a module table names, made whole by its section's folder."""
    folder, named = "", []
    for line in MAP.read_text().splitlines():
        if heading := HEADING.match(line):
            folder = heading.group(1)
        elif (row := ROW.match(line)) and not line.startswith("| module") and "---" not in line:
            name = row.group(1)
            named.append(name if name.startswith(("templates/", "static/")) else folder + name)
    return named


@cache
def definitions(path: Path) -> frozenset[str]:
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return frozenset(names)


def modules_called(dotted: str) -> list[Path]:
    """The code modules a dotted name such as `tapes.signals` or `lookup` can mean."""
    tail = dotted.replace(".", "/")
    return [
        p
        for p in (ROOT / f for f in code_files() if f.endswith(".py"))
        if str(p.with_suffix("")).endswith("/" + tail) or p.parent.name + "/" + p.stem == tail
    ]


def test_every_module_and_static_file_is_named() -> None:
    named = set(named_rows())
    files = [*code_files()] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "static").iterdir())
    assert [f for f in files if f not in named] == []


def test_every_template_is_in_a_named_folder() -> None:
    named = named_rows()
    folders = {n for n in named if n.startswith("templates/") and n.endswith("/")}
    loose = any(n == "templates/*.html" for n in named)
    for path in (ROOT / "templates").rglob("*.html"):
        rel = str(path.relative_to(ROOT))
        assert (
            rel in named
            or str(path.parent.relative_to(ROOT)) + "/" in folders
            or (loose and path.parent == ROOT / "templates")
        ), rel


def test_every_named_file_exists() -> None:
    prose = "\n".join(line for line in MAP.read_text().splitlines() if not ROW.match(line))
    paths = set(named_rows()) | {
        t for t in TICKED.findall(prose) if "/" in t and re.search(r"\.(py|md|c|h|html|css|js|svg)$", t)
    }
    missing = [p for p in sorted(paths) if not list(ROOT.glob(p))]
    assert missing == []


def test_every_named_symbol_exists() -> None:
    wrong = []
    for token in set(TICKED.findall(MAP.read_text())):
        if "/" in token or FILE.search(token):
            continue
        parts = token.removesuffix("()").split(".")
        for cut in range(len(parts) - 1, 0, -1):
            modules = modules_called(".".join(parts[:cut]))
            if modules:
                if not any(parts[cut] in definitions(m) for m in modules):
                    wrong.append(token)
                break
    assert wrong == []
