"""`tapeview demo`: write realistic demo data of every agent family under TAPEVIEW_HOME/demo."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime

from django.conf import settings
from django.core.management.base import BaseCommand

from tapeview.demodata import araliya, bub, nanobot, yachiyo


class Command(BaseCommand):
    help = "Write the demo data directory (replacing an earlier one): Bub, nanobot, yachiyo and araliya."

    def handle(self, *args, **options) -> None:
        root = settings.TAPEVIEW_DEMO_DIR
        if root.exists():
            shutil.rmtree(root)
        now = datetime.now(UTC)
        written = bub.write_bub_demo(root / "bub" / "tapes", now)
        written += nanobot.write(root / "nanobot", now)
        written += yachiyo.write(root / "yachiyo", now)
        written += araliya.write(root / "araliya", now)
        self.stdout.write(f"wrote {len(written)} demo files under {root}")
