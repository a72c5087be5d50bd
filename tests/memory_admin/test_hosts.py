"""Memory stores know their host: a host's look at its sources drops only its own stores, and only
of the sources it looked at, so their history of versions survives another host's index run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.test import override_settings

from memory_admin import catalog
from memory_admin.models import MemoryStore
from tapeview.sources import SourceSpec
from tests.conftest import FIXTURES, Api

pytestmark = pytest.mark.django_db


def nanobot(folder: Path) -> SourceSpec:
    shutil.copytree(FIXTURES / "nanobot_memory" / "current", folder)
    return SourceSpec("mem", "nanobot", folder)


def sync_as(host: str, *specs: SourceSpec) -> None:
    with override_settings(TAPEVIEW_HOST=host):
        catalog.sync_stores(list(specs))


def stores() -> set[tuple[str, str, str]]:
    return set(MemoryStore.objects.values_list("host", "source", "title"))


@pytest.fixture
def two_hosts(settings, tmp_path: Path) -> dict[str, SourceSpec]:
    specs = {"alpha": nanobot(tmp_path / "alpha"), "beta": nanobot(tmp_path / "beta")}
    for host, spec in specs.items():
        sync_as(host, spec)
    return specs


def test_both_hosts_stores_of_a_source_of_the_same_name_are_kept(two_hosts) -> None:
    found = stores()
    assert {h for h, _, _ in found} == {"alpha", "beta"}
    assert {(s, t) for h, s, t in found if h == "alpha"} == {(s, t) for h, s, t in found if h == "beta"}
    assert MemoryStore.objects.values("key").distinct().count() == len(found)


def test_a_host_drops_only_its_own_gone_stores(two_hosts) -> None:
    before = stores()
    (two_hosts["alpha"].path / "workspace" / "SOUL.md").unlink()
    sync_as("alpha", two_hosts["alpha"])
    after = stores()
    assert after < before and {h for h, _, t in before - after} == {"alpha"}
    assert {s for s in before if s[0] == "beta"} <= after


def test_a_run_over_one_source_keeps_the_stores_of_the_others(two_hosts, tmp_path: Path) -> None:
    before = stores()
    other = tmp_path / "other"
    other.mkdir()
    sync_as("alpha", SourceSpec("other", "nanobot", other))  # `tapeview index other` on alpha
    sync_as("gamma")  # a host with no sources at all
    assert stores() == before


def test_the_memory_list_on_one_host_keeps_the_other_hosts_stores(
    client, read_token, settings, two_hosts
) -> None:
    settings.TAPEVIEW_SOURCES = f"mem=nanobot:{two_hosts['alpha'].path}"
    settings.TAPEVIEW_HOST = "alpha"
    r = Api(client, read_token).get("/api/memory", source="mem")
    assert r.status_code == 200 and len(r.json()["items"]) == len(stores())
