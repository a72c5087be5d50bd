"""The compiled lane (tapes/_lane.c) is built by `make setup`, and the index is the same without it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from tapeview.tapes import blocklane
from tests.conftest import FIXTURES
from tests.tapes.indexed import indexed

pytestmark = pytest.mark.django_db


def test_the_compiled_lane_is_built_by_setup() -> None:
    # A build that failed quietly would leave every tape to the Python lane, several times slower.
    assert blocklane.native is not None, "tapeview/tapes/_lane.c is not built: run `make setup`"


def test_without_the_compiled_lane_the_index_is_the_same_and_the_log_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "bub"
    shutil.copytree(FIXTURES / "bub", root)
    compiled = indexed("compiled", root)
    monkeypatch.setattr(blocklane, "native", None)
    blocklane._not_built.cache_clear()
    with caplog.at_level(logging.WARNING, logger="tapeview.index"):
        python = indexed("python", root)
    assert compiled.keys() == python.keys() and len(compiled) >= 8
    for rel in compiled:
        assert compiled[rel] == python[rel], rel
    said = [r.getMessage() for r in caplog.records if r.name == "tapeview.index"]
    assert len(said) == 1 and "compiled lane" in said[0] and "make setup" in said[0]
