"""Deeply nested JSON in an agent's memory file: a readable refusal, never a crash or a 500."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores import araliya_kv, nesting, yachiyo_memory
from memory_admin.stores.model import StoreError, version_of
from tapeview.accounts.models import AuditEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NOW = datetime(2026, 11, 23, 4, 5, 6, tzinfo=UTC)
# 10,000: beyond every parser's recursion; 500: parsed by Python, then beyond every recursive walk.
DEPTHS = [10_000, 500]


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deep_memory_json(path: Path, depth: int) -> bytes:
    """yachiyo's memory.json with one entry whose metadata nests `depth` levels."""
    doc = json.loads(path.read_bytes())
    doc["entries"][0]["metadata"] = {"trace": "DEEP"}
    raw = json.dumps(doc, ensure_ascii=False, indent=2).replace('"DEEP"', nested(depth)).encode()
    path.write_bytes(raw)
    return raw


def deep_kv_json(path: Path, depth: int) -> bytes:
    raw = ('{"cap": 200, "entries": [{"key": "k", "value": ' + nested(depth) + ', "ts": "x"}]}').encode()
    path.write_bytes(raw)
    return raw


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_yachiyo_memory_is_neither_read_nor_rewritten(tmp_path: Path, depth: int) -> None:
    shutil.copytree(FIXTURES / "yachiyo_memory", tmp_path / "yachiyo")
    (ref,) = yachiyo_memory.discover(tmp_path / "yachiyo")
    raw = deep_memory_json(ref.path, depth)

    with pytest.raises(StoreError, match="memory.json"):
        yachiyo_memory.read(ref)
    with pytest.raises(StoreError, match="memory.json"):
        yachiyo_memory.add_entry(ref, "a fact", [], version_of(raw), now=NOW)

    assert ref.path.read_bytes() == raw


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_araliya_kv_is_neither_read_nor_rewritten(tmp_path: Path, depth: int) -> None:
    shutil.copytree(FIXTURES / "araliya", tmp_path / "work")
    ref = araliya_kv.discover(tmp_path / "work")[0]
    raw = deep_kv_json(ref.path, depth)

    with pytest.raises(StoreError, match="kv.json"):
        araliya_kv.read(ref)
    with pytest.raises(StoreError, match="kv.json"):
        araliya_kv.set_value(ref, "k", "v", version_of(raw))

    assert ref.path.read_bytes() == raw
    assert "kv.json" in araliya_kv.discover(tmp_path / "work")[0].note


def test_the_depth_check_walks_without_recursion() -> None:
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    assert nesting.too_deep(deep) and not nesting.too_deep([[{"a": [1]}]])
    assert not nesting.too_deep(json.loads(nested(nesting.MAX_DEPTH)))
    assert nesting.too_deep(json.loads(nested(nesting.MAX_DEPTH + 1)))


@pytest.fixture
def deep_stores(memory_sources: dict[str, Path]) -> dict[str, MemoryStore]:
    """The yachiyo and araliya stores of the sources, their files made 10,000 levels deep."""
    yachiyo = MemoryStore.objects.get(kind=yachiyo_memory.KIND)
    kv = MemoryStore.objects.filter(kind=araliya_kv.KIND).order_by("owner").first()
    deep_memory_json(Path(yachiyo.path), 10_000)
    deep_kv_json(Path(kv.path), 10_000)
    return {"yachiyo": yachiyo, "araliya": kv}


@pytest.mark.django_db
def test_memory_pages_of_a_deep_file_say_why_they_cannot_show_it(viewer_client, deep_stores) -> None:
    assert viewer_client.get("/memory/").status_code == 200
    for store in deep_stores.values():
        r = viewer_client.get(f"/memory/{store.key}/")
        page = r.content.decode()
        assert r.status_code == 200 and "This store cannot be read now" in page, store.kind
        assert "nested too deep" in page or "nests more than" in page
        diff = viewer_client.get(f"/memory/{store.key}/diff")
        assert diff.status_code == 400 and "This store cannot be read now" in diff.content.decode()


@pytest.mark.django_db
def test_an_edit_of_a_deep_file_is_refused_and_writes_nothing(operator_client, deep_stores) -> None:
    kv = deep_stores["araliya"]
    before = Path(kv.path).read_bytes()
    r = operator_client.post(
        f"/memory/{kv.key}/kv",
        {"action": "set", "key": "k", "value": "v", "base_version": version_of(before)},
    )
    assert r.status_code == 400 and "Not written" in r.content.decode()
    assert Path(kv.path).read_bytes() == before and not AuditEvent.objects.exists()


@pytest.mark.django_db
def test_the_api_answers_a_deep_file_with_400_and_a_reason(reader, deep_stores) -> None:
    assert reader.get("/api/memory", limit=500).status_code == 200
    for store in deep_stores.values():
        r = reader.get(f"/api/memory/{store.key}")
        assert r.status_code == 400 and list(r.json()) == ["detail"], store.kind
        assert "too deep" in r.json()["detail"] or "nests more than" in r.json()["detail"]
