"""Real sample tapes of every family, copied and indexed: what the operator-experience tests look at."""

from __future__ import annotations

import shutil
from pathlib import Path

from tapeview.tapes import discovery
from tapeview.tapes.models import Tape

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NANOBOT_SESSIONS = "current/sessions/b8ca9e09c12a8b370fe81503daa78f45"


def serve(settings, tmp_path: Path) -> dict[str, Path]:
    """Bub samples, nanobot (0.3.5 and 0.1.4), yachiyo and araliya, indexed as `tapeview serve` does."""
    roots = {"bub": tmp_path / "bub"}
    shutil.copytree(FIXTURES / "bub", roots["bub"], ignore=shutil.ignore_patterns("tapes_dir"))
    for name in ("nanobot", "yachiyo", "araliya"):
        roots[name] = tmp_path / name
        shutil.copytree(FIXTURES / name, roots[name])
    settings.TAPEVIEW_SOURCES = ",".join(
        [
            f"bub=bub:{roots['bub']}",
            f"nb=nanobot:{roots['nanobot'] / 'current'}",
            f"old=nanobot:{roots['nanobot'] / 'legacy-0.1.4' / 'workspace'}",
            f"ya=yachiyo:{roots['yachiyo'] / 'data'}",
            f"ar=araliya:{roots['araliya']}",
        ]
    )
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return roots


def tape(label: str, source: str) -> Tape:
    return Tape.objects.get(label=label, source=source)
