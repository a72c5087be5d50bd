"""The indexer's fast lane in C (tapeview/tapes/_lane.c, see tapes/blocklane.py) and the search pass's
text walk (tapeview/search/_text.c, see search/text.py), which `pip install -e .` builds in place;
everything else about the package is in pyproject.toml."""

from setuptools import Extension, setup

BOTH = {"depends": ["tapeview/sources/bub_dates.h"], "extra_compile_args": ["-O2"]}  # the header: in both
LANE = {**BOTH, "depends": [*BOTH["depends"], "tapeview/tapes/lane_next.h"]}  # Bub's next format

setup(
    ext_modules=[
        Extension("tapeview.tapes._lane", ["tapeview/tapes/_lane.c"], **LANE),
        Extension("tapeview.search._text", ["tapeview/search/_text.c"], **BOTH),
    ]
)
