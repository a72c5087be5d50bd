"""A `$BUB_HOME/tapes` folder of Bub's next format beside a 0.5.1 tape, under their real names."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SESSION = "f887c9f116649249__0b871d5e50e7c192"  # cli:local
RESET = "f887c9f116649249__0a7a35ba7ddb722e"  # cli:reset-demo
OLD = "9d11f561157e98d3__f2234c5149b3f79d"  # an idle 0.5.1 tape (tests/fixtures/bub/tapes_dir)
NAMES = {
    "session_realistic.jsonl": f"{SESSION}.jsonl",
    "session_realistic__sidecar__spill.jsonl": f"{SESSION}__sidecar__spill.jsonl",
    "reset_after_archive.jsonl": f"{RESET}.jsonl",
    "reset_archive_before_reset.jsonl.bak": f"{RESET}.jsonl.20261201T221239Z.bak",
    "reset_archive_sidecar_spill.jsonl.bak": f"{RESET}__sidecar__spill.jsonl.20261201T221239Z.bak",
}


def make_home(root: Path, *, old: bool = True) -> Path:
    root.mkdir(parents=True)
    for sample, name in NAMES.items():
        shutil.copy(FIXTURES / "bub-next" / sample, root / name)
    if old:
        shutil.copy(FIXTURES / "bub" / "tapes_dir" / f"{OLD}.jsonl", root / f"{OLD}.jsonl")
    return root
