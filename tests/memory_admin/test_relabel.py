"""One folder is one source whatever its label: a relabel keeps the stores, versions, reviews and
search docs of its folder; a source taken out of the configuration keeps its stores, marked."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from tests.conftest import FIXTURES

pytestmark = pytest.mark.django_db


@pytest.fixture
def folders(settings, tmp_path: Path) -> dict[str, Path]:
    bub = tmp_path / "bub"
    bub.mkdir()
    for name in ("hand_memory_zone.jsonl", "session_realistic.jsonl"):
        shutil.copy(FIXTURES / "bub" / name, bub / name)
    shutil.copytree(FIXTURES / "nanobot_memory", tmp_path / "nanobot_memory")
    settings.TAPEVIEW_REFRESH_SECONDS = 0
    settings.TAPEVIEW_QUIET_SECONDS = 0
    return {"bub": bub, "nanobot": tmp_path / "nanobot_memory" / "current"}


def configure(settings, folders: dict[str, Path], **labels: str) -> None:
    """The configuration a restart reads: `bub="a"` gives the bub folder the label a."""
    settings.TAPEVIEW_SOURCES = ",".join(f"{label}={kind}:{folders[kind]}" for kind, label in labels.items())


def stores(api, kind: str) -> list[dict]:
    return [s for s in api.get("/api/memory", limit=500).json()["items"] if s["kind"] == kind]


def versions(api, store_id: str) -> list[str]:
    return [v["version"] for v in api.get(f"/api/memory/{store_id}/versions", limit=500).json()["items"]]


def edit(api, store_id: str, text: str) -> None:
    base = api.get(f"/api/memory/{store_id}").json()["version"]
    answer = api.put(f"/api/memory/{store_id}/long-term", {"content": text, "base_version": base})
    assert answer.status_code == 200, answer.content


def memory_hits(api, word: str) -> list[str]:
    return [h["store_id"] for h in api.get("/api/memory/search", q=word, limit=50).json()["items"]]


@pytest.fixture
def kept(settings, folders, writer) -> dict:
    """Label a: a MEMORY.md and a Bub zone edited through the API (versions kept), a tape reviewed."""
    configure(settings, folders, bub="a", nanobot="na")
    memory = stores(writer, "nanobot.memory")[0]
    zone = stores(writer, "bub.zone")[0]
    for n in range(1, 4):
        edit(writer, memory["id"], f"# Facts\n\n- marmalade fact {n}\n")
        edit(writer, zone["id"], f"zone fact {n}: quokka")
    tape = writer.get("/api/tapes", source="a", limit=500).json()["items"][0]
    review = writer.post(f"/api/tapes/{tape['id']}/reviews", {"pos": 1, "score": 4, "comment": "kept"})
    assert review.status_code == 201, review.content
    assert memory_hits(writer, "marmalade") == [memory["id"]]
    return {
        "memory": memory["id"],
        "zone": zone["id"],
        "tape": tape["id"],
        "versions": {memory["id"]: versions(writer, memory["id"]), zone["id"]: versions(writer, zone["id"])},
    }


def test_a_relabelled_source_keeps_its_stores_versions_and_reviews_once(settings, folders, kept, writer):
    configure(settings, folders, bub="b", nanobot="nb")
    memory, zone = stores(writer, "nanobot.memory"), stores(writer, "bub.zone")
    assert [(s["id"], s["source"], s["source_configured"]) for s in memory] == [(kept["memory"], "nb", True)]
    assert [(s["id"], s["source"]) for s in zone] == [(kept["zone"], "b")]
    for store_id, seen in kept["versions"].items():
        assert versions(writer, store_id) == seen and len(seen) >= 4
    tapes = writer.get("/api/tapes", limit=500).json()["items"]
    assert {t["source"] for t in tapes} == {"b"} and kept["tape"] in {t["id"] for t in tapes}
    reviews = writer.get("/api/reviews", tape=kept["tape"]).json()["items"]
    assert [(r["comment"], r["orphaned"]) for r in reviews] == [("kept", False)]
    assert memory_hits(writer, "marmalade") == [kept["memory"]]
    assert memory_hits(writer, "quokka") == [kept["zone"]]
    # Writes go on where they were: one more version of the same store.
    edit(writer, kept["memory"], "# Facts\n\n- marmalade fact 4\n")
    assert len(versions(writer, kept["memory"])) == len(kept["versions"][kept["memory"]]) + 1


def test_the_tapes_of_a_relabelled_source_are_searched_under_its_new_label(settings, folders, kept, reader):
    def sources(q: str) -> set[tuple[str, str]]:
        return {
            (h["source"], h["tape_id"]) for h in reader.get("/api/search", q=q, limit=100).json()["items"]
        }

    before = sources("README")
    assert {source for source, _ in before} == {"a"}
    configure(settings, folders, bub="b", nanobot="nb")
    reader.get("/api/tapes")  # the page look that follows the relabel
    from tapeview.search import feed

    feed.indexer_idle(None)  # as the watcher does when idle: the search pass catches up
    assert sources("README") == {("b", tape) for _, tape in before}  # the same tapes, under their new label
    assert reader.get("/api/search", q="README", source="b").json()["items"]


def test_a_source_taken_out_keeps_its_stores_marked_with_their_versions(
    settings, folders, kept, writer, operator_client
):
    configure(settings, folders, bub="a")  # the nanobot source is no longer configured
    memory = stores(writer, "nanobot.memory")
    assert [(s["id"], s["source"], s["source_configured"]) for s in memory] == [(kept["memory"], "na", False)]
    assert versions(writer, kept["memory"]) == kept["versions"][kept["memory"]]
    answer = writer.get(f"/api/memory/{kept['memory']}")
    assert answer.status_code == 400 and "source no longer configured" in answer.json()["detail"]
    refused = writer.put(f"/api/memory/{kept['memory']}/long-term", {"content": "x", "base_version": "y"})
    assert refused.status_code == 400 and "source no longer configured" in refused.json()["detail"]
    listing = operator_client.get("/memory/").content.decode()
    assert f'id="not-configured-{kept["memory"]}">source no longer configured' in listing
    page = operator_client.get(f"/memory/{kept['memory']}/").content.decode()
    assert "Source no longer configured" in page
    assert reverse("memory_admin:store_edit", args=[kept["memory"]]) not in page  # nothing is written
    assert kept["versions"][kept["memory"]][0][:20] in page  # the kept versions are listed
    # Its tapes leave the index, a Bub zone's store stays: the zone's tape row goes with them.
    configure(settings, folders, nanobot="na")
    zone = stores(writer, "bub.zone")
    assert [(s["id"], s["source_configured"], s["tape_id"]) for s in zone] == [(kept["zone"], False, None)]
    # Its versions are those Tapeview saw (the first look, then each write): the older zones in its
    # tape were read from the tape, which is no longer indexed.
    seen = versions(writer, kept["zone"])
    assert len(seen) == 4 and seen == kept["versions"][kept["zone"]][:4]
    assert operator_client.get(f"/memory/{kept['zone']}/").status_code == 200
    # Configured again under yet another label: read as before, under it.
    configure(settings, folders, bub="c", nanobot="nc")
    memory = stores(writer, "nanobot.memory")
    assert [(s["id"], s["source"], s["source_configured"]) for s in memory] == [(kept["memory"], "nc", True)]
    assert writer.get(f"/api/memory/{kept['memory']}").json()["content"] == "# Facts\n\n- marmalade fact 3\n"


def test_a_new_source_under_an_old_label_gets_rows_of_its_own(settings, folders, kept, writer, tmp_path):
    configure(settings, folders, bub="b", nanobot="nb")
    writer.get("/api/memory")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(folders["bub"] / "hand_memory_zone.jsonl", other / "hand_memory_zone.jsonl")
    settings.TAPEVIEW_SOURCES += f",a=bub:{other}"
    zones = {s["source"]: s["id"] for s in stores(writer, "bub.zone")}
    assert set(zones) == {"a", "b"} and zones["b"] == kept["zone"] and zones["a"] != kept["zone"]
    tapes = writer.get("/api/tapes", source="a", limit=500).json()["items"]
    assert tapes and kept["tape"] not in {t["id"] for t in tapes}


def test_a_database_made_before_folders_were_recorded_follows_a_relabel_by_its_tapes(
    settings, folders, kept, writer
):
    from tapeview.tapes.models import SourceFolder

    SourceFolder.objects.all().delete()
    configure(settings, folders, bub="b", nanobot="na")
    assert [(s["id"], s["source"]) for s in stores(writer, "bub.zone")] == [(kept["zone"], "b")]
    assert versions(writer, kept["zone"]) == kept["versions"][kept["zone"]]
