"""`tapeview demo`: write realistic demo data of every agent family under TAPEVIEW_HOME/demo, once."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

from django.conf import settings
from django.core.management.base import BaseCommand

from tapeview.demodata import araliya, bub, nanobot, yachiyo


class Command(BaseCommand):
    help = (
        "Write the demo data (Bub, nanobot, yachiyo, araliya) where it is missing; "
        "demo data already there is kept, edits included. --reset writes it all afresh."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--reset", action="store_true", help="delete the demo data and write it afresh")

    def handle(self, *args, reset: bool, **options) -> None:
        root = settings.TAPEVIEW_DEMO_DIR
        if reset and root.exists():
            shutil.rmtree(root)
        now = datetime.now(UTC)
        writers = {
            "bub": lambda: bub.write_bub_demo(root / "bub" / "tapes", now),
            "nanobot": lambda: nanobot.write(root / "nanobot", now),
            "yachiyo": lambda: yachiyo.write(root / "yachiyo", now),
            "araliya": lambda: araliya.write(root / "araliya", now),
        }
        # A family's folder that exists is the operator's now: `make run` must not undo their edits.
        kept = [family for family in writers if (root / family).exists()]
        written = [path for family, write in writers.items() if family not in kept for path in write()]
        if written:
            self.stdout.write(f"wrote {len(written)} demo files under {root}")
        if kept:
            self.stdout.write(
                f"kept the demo data already under {root} ({', '.join(kept)}); "
                "`tapeview demo --reset` writes it afresh"
            )
