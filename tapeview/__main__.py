"""`python -m tapeview` is the `tapeview` command."""

from tapeview.cli import main

main()
