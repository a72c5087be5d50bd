"""How the browser tests drive Debian's Chromium (Playwright's own browser download is not used)."""

from __future__ import annotations

import os
from pathlib import Path

CHROMIUM = os.environ.get("TAPEVIEW_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
VIEWPORT = {"width": 1400, "height": 1000}
