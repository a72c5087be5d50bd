"""`tapeview demo`: write realistic demo data of every agent family under TAPEVIEW_HOME/demo."""

from __future__ import annotations

import shutil

from django.conf import settings
from django.core.management.base import BaseCommand

from tapeview.demo import write_bub_demo


class Command(BaseCommand):
    help = "Write the demo data directory (replacing an earlier one)."

    def handle(self, *args, **options) -> None:
        root = settings.TAPEVIEW_DEMO_DIR
        if root.exists():
            shutil.rmtree(root)
        written = write_bub_demo(root / "bub" / "tapes")
        self.stdout.write(f"wrote {len(written)} demo files under {root}")
