"""Real fixture tapes of every family (Bub 0.5.1, Bub-next, nanobot, yachiyo, araliya), copied and indexed."""

from __future__ import annotations

import shutil
from pathlib import Path

from tapeview.tapes import discovery

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def index_families(settings, tmp_path: Path) -> dict[str, Path]:
    roots = {
        "bub": tmp_path / "bub",
        "next": tmp_path / "next",
        "nanobot": tmp_path / "nanobot",
        "yachiyo": tmp_path / "yachiyo",
        "araliya": tmp_path / "araliya",
    }
    shutil.copytree(FIXTURES / "bub", roots["bub"], ignore=shutil.ignore_patterns("tapes_dir"))
    shutil.copytree(FIXTURES / "bub-next", roots["next"])
    shutil.copytree(FIXTURES / "nanobot" / "current", roots["nanobot"])
    shutil.copytree(FIXTURES / "yachiyo" / "data", roots["yachiyo"])
    shutil.copytree(FIXTURES / "araliya" / "bot-pkey51aee87e", roots["araliya"])
    kinds = {"next": "bub"}
    settings.TAPEVIEW_SOURCES = ",".join(f"{k}={kinds.get(k, k)}:{p}" for k, p in roots.items())
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    discovery.sync()
    return roots
