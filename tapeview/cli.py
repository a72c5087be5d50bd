"""The `tapeview` console script: every management command, `tapeview serve` first of all."""

from __future__ import annotations

import os
import sys

from .home import home, prepare


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tapeview.settings")
    prepare(home())
    from django.core.management import execute_from_command_line

    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2:
        argv.append("help")
    execute_from_command_line(argv)
