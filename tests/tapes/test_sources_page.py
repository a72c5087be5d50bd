"""The Sources page: what each source does not read and why, and a source whose kind cannot be told."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from django.utils.html import escape

from tapeview.tapes import discovery

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def row(page: str, label: str) -> str:
    return re.search(rf"<tr[^>]*>\s*<td><a [^>]*>{label}</a>.*?</tr>", page, re.S).group(0)


@pytest.fixture
def bare(settings, tmp_path: Path) -> dict[str, Path]:
    """Bare paths as a user gives them: the Bub samples (with a tapes folder inside) and the nanobot samples' parent."""
    roots = {"bub": tmp_path / "bub", "nanobot": tmp_path / "nanobot"}
    shutil.copytree(FIXTURES / "bub", roots["bub"])
    shutil.copytree(FIXTURES / "nanobot", roots["nanobot"])
    settings.TAPEVIEW_SOURCES = f"samples={roots['bub']},agents={roots['nanobot']}"
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    discovery.sync()
    return roots


def test_a_subfolder_a_source_does_not_read_is_named_with_why(viewer_client, bare) -> None:
    page = viewer_client.get("/sources/").content.decode()
    samples = row(page, "samples")
    assert "<code>tapes_dir/</code> not read: Bub keeps its tapes directly in the tapes folder" in samples
    assert (
        escape(f"it holds bub files: add it as a source of its own, bub:{bare['bub'] / 'tapes_dir'}")
        in samples
    )


def test_a_folder_whose_kind_cannot_be_told_is_a_problem_and_the_rest_is_served(viewer_client, bare) -> None:
    response = viewer_client.get("/sources/")
    assert response.status_code == 200
    agents = row(response.content.decode(), "agents")
    assert 'class="trouble"' in agents and '<span class="bad">unknown</span>' in agents
    assert escape(f"cannot tell what {bare['nanobot']} holds, so nothing in it is read") in agents
    assert escape(f"nanobot:{bare['nanobot'] / 'current'}") in agents  # what to add instead
    assert escape(f"nanobot:{bare['nanobot'] / 'legacy-0.1.4' / 'workspace'}") in agents
    assert "session_realistic" in viewer_client.get("/?source=samples").content.decode()


def test_a_source_that_reads_every_folder_it_has_names_none(viewer_client, settings, tmp_path) -> None:
    shutil.copytree(FIXTURES / "nanobot" / "current", tmp_path / "nb")
    settings.TAPEVIEW_SOURCES = f"nb={tmp_path / 'nb'}"
    page = viewer_client.get("/sources/").content.decode()
    assert "not read:" not in row(page, "nb")


def test_a_subfolder_is_named_once_it_appears(viewer_client, settings, tmp_path) -> None:
    shutil.copytree(FIXTURES / "nanobot" / "current", tmp_path / "nb")
    settings.TAPEVIEW_SOURCES = f"nb={tmp_path / 'nb'}"
    (tmp_path / "nb" / "cron").mkdir()
    page = viewer_client.get("/sources/").content.decode()
    assert "<code>cron/</code> not read: nanobot keeps no sessions or memory here" in row(page, "nb")
