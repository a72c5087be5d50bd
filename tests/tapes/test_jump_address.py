"""The jump form's address: one clean set of parameters, the empty ones dropped."""

from __future__ import annotations

import pytest

from tapeview.tapes.models import Tape

pytestmark = pytest.mark.django_db


@pytest.fixture
def realistic(served) -> Tape:
    return Tape.objects.get(name="session_realistic")


@pytest.mark.parametrize(
    ("query", "clean"),
    [
        ("?at=75&time=", "?at=75"),
        ("?at=&time=2026-11-22T01%3A37%3A39", "?time=2026-11-22T01%3A37%3A39"),
        ("?at=75&time=&at=30&time=&at=90&time=", "?at=90"),
        ("?at=&time=", ""),
    ],
)
def test_a_jump_with_empty_or_repeated_fields_goes_to_the_clean_address(
    viewer_client, realistic, query: str, clean: str
) -> None:
    r = viewer_client.get(f"/tapes/{realistic.key}/{query}")
    assert r.status_code == 302
    assert r["Location"] == f"/tapes/{realistic.key}/{clean}"


def test_a_clean_address_is_served_as_it_is(viewer_client, realistic) -> None:
    r = viewer_client.get(f"/tapes/{realistic.key}/?at=30&errors=1")
    assert r.status_code == 200 and "HX-Push-Url" not in r


def test_the_jump_form_by_htmx_pushes_the_clean_address(viewer_client, realistic) -> None:
    r = viewer_client.get(f"/tapes/{realistic.key}/?at=30&time=", headers={"HX-Request": "true"})
    assert r.status_code == 200 and 'id="e30"' in r.content.decode()
    assert r["HX-Push-Url"] == f"/tapes/{realistic.key}/?at=30"


def test_the_jump_form_asks_the_page_without_its_current_query(viewer_client, realistic) -> None:
    html = viewer_client.get(f"/tapes/{realistic.key}/?at=75&errors=1").content.decode()
    path = f"/tapes/{realistic.key}/"
    assert f'action="{path}" class="jump" hx-get="{path}"' in html
    assert '<input type="hidden" name="errors" value="1">' in html  # the narrowing is kept
