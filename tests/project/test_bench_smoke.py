"""The scale benchmark (bench/scale.py) at a tiny scale: every row of its table gets a figure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The figures of the scale table, as the rows of the printed table begin.
FIGURES = [
    "cold index, real",
    "cold index, 1,000-entry tape",
    "cold index on PostgreSQL",
    "full-text search catching up",
    "search p50 over 20 terms",
    "search p50 with a filter",
    "context preview after the last anchor",
    "context preview after the middle anchor",
    "timeline page, middle of the 1,000-entry tape",
    "timeline page, the first draw after 100 entries were appended",
    "timeline page, the first draw with nothing kept",
    "tapeview serve over 10 tapes, empty database",
    "session index refresh",
    "incremental index of 100 appended entries",
    "peak RSS indexing 1,000 entries",
]


def table_rows(out: str) -> dict[str, list[str]]:
    rows = [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in out.splitlines()
        if line.startswith("| ")
    ]
    return {row[0]: row[1:] for row in rows[2:]}


def test_the_scale_benchmark_prints_every_row_with_a_measured_number(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/scale.py", "--scale", "0.001", "--db", "sqlite", "--corpus", str(tmp_path),
         "--runs", "1", "--refreshes", "2"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "### sqlite (corpus scale 0.001" in done.stdout
    rows = table_rows(done.stdout)
    assert len(rows) == len(FIGURES), done.stdout
    for figure in FIGURES:
        (label, (measured, raw, ratio, target, met)) = next(
            ((label, cells) for label, cells in rows.items() if label.startswith(figure)), (figure, [""] * 5)
        )
        assert measured, f"no row {figure!r} in:\n{done.stdout}"
        if figure == "cold index on PostgreSQL":
            assert measured == "- (this is SQLite)"
        elif figure == "full-text search catching up":
            assert measured == "same pass (not separate yet)" or re.search(r"\d", measured), label
        else:
            assert re.search(r"\d", measured) and re.search(r"\d", ratio), (label, measured, ratio)
            assert met in ("yes", "NO"), (label, met)
    assert (tmp_path / "manifest.json").exists() and len(list((tmp_path / "many").glob("*.jsonl"))) == 10


def test_the_search_engines_benchmark_prints_our_reading_and_each_engine(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "bench/search_engines.py", "--scale", "0.001", "--corpus", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # The table's rows: a step's name in 44 characters, then its figures (other lines are notes).
    rows = [(line[:44].strip(), line[44:].split()) for line in done.stdout.splitlines()[2:]]
    figures = {name: cells for name, cells in rows if cells and re.fullmatch(r"[\d.]+", cells[0])}
    assert "200 entries" in done.stdout.splitlines()[0], done.stdout
    for step in ("raw limit", "reading: catchup.entry_rows", "SQLite FTS5, as Tapeview", "SQLite FTS5 floor"):
        (cells,) = [cells for name, cells in figures.items() if name.startswith(step)]
        docs_per_s, ratio = int(cells[1].replace(",", "")), float(cells[2])
        assert docs_per_s > 0 and ratio > 0, (step, cells)
    engines = {name: cells for name, cells in figures.items() if name.startswith(("SQLite", "tantivy"))}
    assert len(engines) >= 2
    for name, cells in engines.items():  # the whole pass (reading + engine) is slower than the engine
        assert 0 < float(cells[3]) <= float(cells[2]), (name, cells)


def test_the_fleet_scale_benchmark_times_every_query_and_page_at_each_size() -> None:
    done = subprocess.run(
        [sys.executable, "bench/fleet_scale.py", "--db", "sqlite", "--first", "100", "--max", "1000",
         "--hosts", "10", "--runs", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "### sqlite: median ms per call, ratio 1,000 / 100 tapes" in done.stdout
    rows = table_rows(done.stdout)  # the first figure's row goes with the header (table_rows)
    for label in (
        "page: session index",
        "page: session index, next page (keyset)",
        "page: Sources",
        "API: /api/tapes",
    ):
        small, large, ratio = rows[label]
        assert float(small) > 0 and float(large) > 0 and float(ratio) > 0, (label, done.stdout)
