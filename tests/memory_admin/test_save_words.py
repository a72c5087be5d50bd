"""Saving memory text: a text that cannot be saved says why on the page and in
the API alike (one limit, one message), and a Save clicked twice is saved once, not a conflict."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from memory_admin.models import MemoryStore
from memory_admin.stores.model import MAX_TEXT, text_problem
from tapeview.accounts.models import AuditEvent

pytestmark = pytest.mark.django_db


def user_md() -> MemoryStore:
    return MemoryStore.objects.get(kind="nanobot.file", title="USER.md")


def version(client, key: str) -> str:
    page = client.get(f"/memory/{key}/").content.decode()
    return re.search(r'<code id="version">([^<]+)</code>', page).group(1)


def messages(response) -> list[str]:
    found = re.search(r'<ul class="messages">(.*?)</ul>', response.content.decode(), re.S)
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", found.group(1))] if found else []


def form_error(response) -> str:
    found = re.search(
        r'<p class="problem" id="form-error" role="alert">(.*?)</p>', response.content.decode(), re.S
    )
    return html.unescape(found.group(1)).strip() if found else ""


@pytest.mark.parametrize(
    "text", ["Name: Ada\nnul\x00here\n", "x" * (MAX_TEXT + 1)], ids=["a NUL character", "past the limit"]
)
def test_a_text_that_cannot_be_saved_says_why_keeps_the_text_and_writes_nothing(
    operator_client, memory_sources, text: str
) -> None:
    memory = user_md()
    path = Path(memory.path)
    before = path.read_bytes()

    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": text, "base_version": version(operator_client, memory.key)}
    )

    assert r.status_code == 400
    assert form_error(r) == f"Nothing was saved. {text_problem(text)}"
    textarea = re.search(r'<textarea name="text"[^>]*>(.*?)</textarea>', r.content.decode(), re.S).group(1)
    assert html.unescape(textarea) == text
    assert path.read_bytes() == before
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("text", "kind"),
    [("nul\x00here", "string_pattern_mismatch"), ("x" * (MAX_TEXT + 1), "string_too_long")],
    ids=["a NUL character", "past the limit"],
)
def test_the_api_refuses_the_same_texts_in_the_page_s_words(
    operator_client, writer, memory_sources, text: str, kind: str
) -> None:
    memory = user_md()
    path = Path(memory.path)
    before = path.read_bytes()

    r = writer.put(
        f"/api/memory/{memory.key}/long-term",
        {"content": text, "base_version": version(operator_client, memory.key)},
    )

    assert r.status_code == 422
    assert r.json() == {"detail": [{"loc": ["body", "content"], "msg": text_problem(text), "type": kind}]}
    assert path.read_bytes() == before


def test_a_text_at_the_limit_is_saved(operator_client, memory_sources) -> None:
    memory = user_md()
    text = "x" * (MAX_TEXT - 1) + "\n"
    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": text, "base_version": version(operator_client, memory.key)}
    )
    assert r.status_code == 302
    assert Path(memory.path).read_text() == text


def test_a_zone_s_long_term_text_with_a_nul_is_refused_in_the_same_words(
    operator_client, memory_sources
) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone")
    path = Path(zone.path)
    before = path.read_bytes()
    text = "Likes \x00 green tea."

    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": text, "base_version": "8"}
    )

    assert r.status_code == 400
    assert text_problem(text) in html.unescape(r.content.decode())
    assert path.read_bytes() == before


def test_save_clicked_twice_is_saved_once_and_says_so_both_times(operator_client, memory_sources) -> None:
    memory = user_md()
    base = version(operator_client, memory.key)
    # As a browser's textarea sends it: CRLF line endings, which the file does not keep.
    post = {
        "text": Path(memory.path).read_text().replace("\n", "\r\n") + "- Prefers tea.\r\n",
        "base_version": base,
    }

    first = operator_client.post(f"/memory/{memory.key}/edit", post, follow=True)
    written = Path(memory.path).read_bytes()
    second = operator_client.post(f"/memory/{memory.key}/edit", post, follow=True)

    now = version(operator_client, memory.key)
    assert second.redirect_chain == first.redirect_chain == [(f"/memory/{memory.key}/", 302)]
    assert messages(second) == messages(first) == [f"Saved as version {now}."]
    assert Path(memory.path).read_bytes() == written and written.endswith(b"- Prefers tea.\n")
    assert list(AuditEvent.objects.values_list("action", "before", "after")) == [("edit", base, now)]


def test_a_different_text_on_the_stale_base_is_still_a_conflict(operator_client, memory_sources) -> None:
    memory = user_md()
    base = version(operator_client, memory.key)
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "first tab\n", "base_version": base})

    r = operator_client.post(f"/memory/{memory.key}/edit", {"text": "second tab\n", "base_version": base})

    assert r.status_code == 409
    assert "You (olga) changed USER.md in another tab" in r.content.decode()
    assert Path(memory.path).read_text() == "first tab\n"


def test_the_same_text_the_agent_wrote_meanwhile_is_still_a_conflict(operator_client, memory_sources) -> None:
    memory = user_md()
    base = version(operator_client, memory.key)
    Path(memory.path).write_text("the agent's text\n")

    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": "the agent's text\n", "base_version": base}
    )

    assert r.status_code == 409 and "The agent changed USER.md" in r.content.decode()


def test_a_zone_s_long_term_save_clicked_twice_says_saved_both_times(operator_client, memory_sources) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone")
    post = {"action": "long_term", "text": "Likes green tea.", "base_version": "8"}

    first = operator_client.post(f"/memory/{zone.key}/zone", post, follow=True)
    second = operator_client.post(f"/memory/{zone.key}/zone", post, follow=True)

    assert second.redirect_chain == [(f"/memory/{zone.key}/", 302)]
    assert messages(second) == messages(first) == ["Saved the long-term memory: saved as version 9."]
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["zone.long_term"]


@pytest.mark.parametrize("again", ["\n", "\n\n"], ids=["one newline more", "two newlines more"])
def test_a_second_save_whose_text_differs_in_trailing_newlines_is_a_conflict(
    operator_client, memory_sources, again: str
) -> None:
    memory = user_md()
    base = version(operator_client, memory.key)
    operator_client.post(f"/memory/{memory.key}/edit", {"text": "first tab\n", "base_version": base})

    r = operator_client.post(
        f"/memory/{memory.key}/edit", {"text": f"first tab\n{again}", "base_version": base}
    )

    assert r.status_code == 409
    assert "You (olga) changed USER.md in another tab" in r.content.decode()
    assert Path(memory.path).read_text() == "first tab\n"


def test_save_clicked_twice_on_a_file_without_a_final_newline_says_saved_both_times(
    operator_client, memory_sources
) -> None:
    memory = user_md()
    Path(memory.path).write_text("no final newline")
    post = {"text": "Likes tea.\r\n", "base_version": version(operator_client, memory.key)}

    first = operator_client.post(f"/memory/{memory.key}/edit", post, follow=True)
    second = operator_client.post(f"/memory/{memory.key}/edit", post, follow=True)

    now = version(operator_client, memory.key)
    assert messages(second) == messages(first) == [f"Saved as version {now}."]
    assert Path(memory.path).read_bytes() == b"Likes tea."


def test_a_zone_s_second_long_term_save_with_a_newline_more_is_a_conflict(
    operator_client, memory_sources
) -> None:
    zone = MemoryStore.objects.get(kind="bub.zone")
    operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": "Likes green tea.", "base_version": "8"}
    )

    r = operator_client.post(
        f"/memory/{zone.key}/zone", {"action": "long_term", "text": "Likes green tea.\n", "base_version": "8"}
    )

    assert r.status_code == 409
    assert "You (olga) changed memory zone in another tab" in r.content.decode()
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["zone.long_term"]
