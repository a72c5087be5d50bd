"""Where Tapeview keeps its own files: the index database, the secret key, the demo data.

Plain Python, read by the settings; only `prepare()` writes, and only the command line calls it,
so importing the settings never touches the disk.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent


def home() -> Path:
    return Path(os.environ.get("TAPEVIEW_HOME") or BASE_DIR / "var").expanduser().resolve()


def read_secret_key(root: Path) -> str | None:
    try:
        return (root / "secret_key").read_text().strip() or None
    except OSError:
        return None


def prepare(root: Path) -> None:
    """Make the home folder and, on a first start, a secret key kept beside the index (never in the repo)."""
    root.mkdir(parents=True, exist_ok=True)
    if os.environ.get("TAPEVIEW_SECRET_KEY") or read_secret_key(root):
        return
    path = root / "secret_key"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_urlsafe(48))


def remember_base_url(root: Path, url: str) -> None:
    """Where `tapeview serve` answers, so that `tapeview signinlink` prints links that work."""
    (root / "base_url").write_text(url)


def base_url(root: Path) -> str:
    try:
        return os.environ.get("TAPEVIEW_BASE_URL") or (root / "base_url").read_text().strip()
    except OSError:
        return "http://127.0.0.1:8000"
