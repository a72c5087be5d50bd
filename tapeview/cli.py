"""The `tapeview` console script: every management command, `tapeview serve` first of all."""

from __future__ import annotations

import os
import sys
import textwrap

from .home import home, prepare

OURS = ("tapeview", "memory_admin")  # the apps whose commands are Tapeview's own
ASKING_FOR_HELP = ([], ["help"], ["--help"], ["-h"])


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tapeview.settings")
    prepare(home())
    from django.core.management import execute_from_command_line

    argv = list(sys.argv if argv is None else argv)
    argv[0] = "tapeview"  # what each command's usage line names, not `python -m django`
    if argv[1:] in ASKING_FOR_HELP:
        sys.stdout.write(usage())
        return
    execute_from_command_line(argv)


def usage() -> str:
    """Tapeview's own commands with what each does, `serve` first; Django's under their own heading."""
    import django
    from django.core.management import get_commands, load_command_class

    django.setup()
    commands = get_commands()
    ours = sorted(
        (n for n, app in commands.items() if app.split(".")[0] in OURS), key=lambda n: (n != "serve", n)
    )
    lines = ["Usage: tapeview COMMAND [OPTIONS]   (`tapeview help COMMAND` for its options)", "", "Commands:"]
    for name in ours:
        about = " ".join(load_command_class(commands[name], name).help.split())
        lines += textwrap.wrap(about, 100, initial_indent=f"  {name:<12}", subsequent_indent=" " * 14)
    lines += ["", "Django:"]
    lines += textwrap.wrap(
        " ".join(sorted(n for n in commands if n not in ours)),
        98,
        initial_indent="  ",
        subsequent_indent="  ",
    )
    return "\n".join(lines) + "\n"
