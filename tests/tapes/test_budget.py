"""GET /api/tapes/{id}/budget: tokens since the last anchor against the model's window, and where to hand off."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tapeview.tapes import discovery, windows
from tapeview.tapes.models import Tape

from .test_phases import bub_lines, families  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db

BUDGET_KEYS = {
    "tokens_since_anchor",
    "window",
    "window_source",
    "ratio",
    "source",
    "suggested_handoff_pos",
    "model",
    "anchor_pos",
    "warn",
    "threshold",
    "overflowed",
    "capped",
    "mid_turn",
    "over",
    "writing",
}


def key(name: str) -> str:
    return Tape.objects.get(name=name).key


def last_reported_since_last_anchor(lines: list[dict]) -> int | None:
    last_anchor = max(i for i, line in enumerate(lines) if line["kind"] == "anchor")
    prompts = [
        line["payload"]["data"]["usage"]["prompt_tokens"]
        for line in lines[last_anchor:]
        if line["kind"] == "event" and line["payload"]["name"] == "run" and "usage" in line["payload"]["data"]
    ]
    return prompts[-1] if prompts else None


def last_run_model(lines: list[dict]) -> str:
    return [line for line in lines if line["payload"].get("name") == "run"][-1]["payload"]["data"]["model"]


def write_tape(folder: Path, name: str, lines: list[dict]) -> str:
    (folder / f"{name}.jsonl").write_text(
        "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
    )
    discovery.sync()
    return key(name)


def line(n: int, kind: str, payload: dict) -> dict:
    return {"id": n, "kind": kind, "payload": payload, "meta": {}, "date": f"2026-11-22T01:00:{n:02d}+00:00"}


def turns(prompts: list[int | None], model: str = "openai:gpt-4o") -> list[dict]:
    """A Bub tape: session/start, then one turn per prompt size (None: the run reports no usage)."""
    out = [line(1, "anchor", {"name": "session/start", "state": {"owner": "human"}})]
    for i, prompt in enumerate(prompts, 1):
        usage = {
            "usage": {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": (prompt or 0) + 10}
        }
        for kind, payload in (
            ("event", {"name": "loop.start", "data": {"model": model}}),
            ("message", {"role": "user", "content": f"question {i}"}),
            ("message", {"role": "assistant", "content": f"answer {i}"}),
            ("event", {"name": "run", "data": {"status": "ok", "model": model, **(usage if prompt else {})}}),
            ("event", {"name": "loop.step", "data": {"status": "ok"}}),
        ):
            out.append(line(len(out) + 1, kind, payload))
    return out


def test_a_bub_tape_counts_the_prompt_tokens_it_last_reported_since_its_last_anchor(reader, served) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    body = reader.get(f"/api/tapes/{key('session_realistic')}/budget").json()
    assert set(body) == BUDGET_KEYS
    model = last_run_model(lines)
    window = windows.KNOWN[
        max((p for p in windows.KNOWN if windows.short_name(model).startswith(p)), key=len)
    ]
    assert body["source"] == "reported" and body["model"] == model
    assert body["tokens_since_anchor"] == last_reported_since_last_anchor(lines)
    assert body["window"] == window and body["ratio"] == pytest.approx(body["tokens_since_anchor"] / window)
    assert body["anchor_pos"] == max(i for i, x in enumerate(lines, 1) if x["kind"] == "anchor")
    assert body["overflowed"] is True  # its auto_handoff/context_overflow anchor
    assert body["warn"] is False and body["capped"] is False


def test_the_window_comes_from_settings_first_and_past_the_threshold_it_warns(
    reader, served, settings
) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    tokens = last_reported_since_last_anchor(lines)
    settings.TAPEVIEW_MODEL_WINDOWS = {last_run_model(lines): tokens + tokens // 10}
    body = reader.get(f"/api/tapes/{key('session_realistic')}/budget").json()
    assert body["window"] == tokens + tokens // 10 and body["warn"] is True and body["threshold"] == 0.8
    settings.TAPEVIEW_BUDGET_WARN = 0.95
    assert reader.get(f"/api/tapes/{key('session_realistic')}/budget").json()["warn"] is False


def test_an_unknown_model_has_an_unknown_window_and_no_ratio(reader, served) -> None:
    k = write_tape(served["samples"], "odd_model", turns([1200, 1500], model="acme:brainiac-7"))
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert (body["tokens_since_anchor"], body["source"]) == (1500, "reported")
    assert body["window"] is None and body["ratio"] is None and body["suggested_handoff_pos"] is None


def test_the_suggested_handoff_is_the_last_turn_boundary_within_half_the_window(
    reader, served, settings
) -> None:
    lines = turns([1000, 3000, 5000])
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 8000}
    k = write_tape(served["samples"], "growing", lines)
    body = reader.get(f"/api/tapes/{k}/budget").json()
    starts = [i for i, x in enumerate(lines, 1) if x["payload"].get("name") == "loop.start"]
    # After turn 2 the context was 3,000 tokens (<= 4,000); after turn 3 it is 5,000.
    assert body["suggested_handoff_pos"] == starts[2] - 1
    assert body["ratio"] == pytest.approx(5000 / 8000)
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 20000}
    assert reader.get(f"/api/tapes/{k}/budget").json()["suggested_handoff_pos"] == len(lines)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # bpe-openai opens its tables the old way
def test_without_reported_usage_the_context_is_estimated_with_a_bpe_tokenizer(reader, served) -> None:
    import bpe_openai

    lines = [
        line(1, "anchor", {"name": "session/start", "state": {}}),
        line(2, "event", {"name": "loop.start", "data": {"model": "openai:gpt-4o"}}),
        line(3, "system", {"content": "You are terse. Answer in one line."}),
        line(4, "message", {"role": "user", "content": "what is in this repo? 中文也可以"}),
        line(5, "message", {"role": "assistant", "content": "A README and a naive CSV parser."}),
    ]
    k = write_tape(served["samples"], "no_usage", lines)
    body = reader.get(f"/api/tapes/{k}/budget").json()
    enc = bpe_openai.get_encoding("o200k_base")
    texts = [x["payload"]["content"] for x in lines[3:]]
    want = sum(len(enc.encode_ordinary(t)) + 3 for t in texts) + len(
        enc.encode_ordinary(lines[2]["payload"]["content"])
    )
    assert (body["source"], body["tokens_since_anchor"]) == ("estimated", want)


def test_a_handoff_starts_the_count_again(reader, served) -> None:
    lines = turns([2000, 2500])
    lines.append(line(len(lines) + 1, "anchor", {"name": "phase/next", "state": {"summary": "done"}}))
    k = write_tape(served["samples"], "handed_off", lines)
    body = reader.get(f"/api/tapes/{k}/budget").json()
    assert (body["source"], body["tokens_since_anchor"], body["anchor_pos"]) == ("estimated", 0, len(lines))


def test_nanobot_reports_its_last_turn_usage_against_the_window_its_config_sets(
    reader,
    viewer_client,
    families,  # noqa: F811
) -> None:
    path = next(
        (families["nanobot"] / "current/sessions").rglob("ZGlzY29yZDoxMTg3NjU0MzIxMDk4NzY1NDMy.jsonl")
    )
    metadata = json.loads(path.read_text().splitlines()[0])
    config = json.loads((families["nanobot"] / "current/config.json").read_text())["agents"]["defaults"]
    assert (config["model"], config["contextWindowTokens"]) == ("anthropic/claude-sonnet-4-5", 200_000)
    tape = Tape.objects.get(source="nb", name=path.stem)
    body = reader.get(f"/api/tapes/{tape.key}/budget").json()
    used = metadata["metadata"]["_last_usage"]["input_tokens"]
    assert body["tokens_since_anchor"] == used
    assert (body["source"], body["window"], body["window_source"]) == ("reported", 200_000, "config")
    assert (body["model"], body["ratio"]) == ("anthropic/claude-sonnet-4-5", used / 200_000)
    assert body["suggested_handoff_pos"] is None  # nanobot takes no handoff
    page = viewer_client.get(f"/tapes/{tape.key}/").content.decode()
    gauge = page.split('id="budget"')[1].split("</section>")[0]
    assert "of 200,000 tokens" in gauge and "window unknown" not in gauge
    assert "anthropic/claude-sonnet-4-5" in gauge and "the window the agent's config sets" in gauge


def test_a_nanobot_config_edited_later_moves_the_window(reader, families) -> None:  # noqa: F811
    config_path = families["nanobot"] / "current/config.json"
    config = json.loads(config_path.read_text())
    config["agents"]["defaults"].pop("contextWindowTokens")
    config["agents"]["defaults"]["context_window_tokens"] = 64_000  # as nanobot also takes it
    config_path.chmod(0o644)
    config_path.write_text(json.dumps(config))
    discovery.sync()
    tape = Tape.objects.filter(source="nb", role="tape").first()
    assert reader.get(f"/api/tapes/{tape.key}/budget").json()["window"] == 64_000
    config_path.write_text("{ half a config")
    discovery.sync()
    body = reader.get(f"/api/tapes/{tape.key}/budget").json()
    assert (body["window"], body["window_source"], body["model"]) == (None, None, None)


def test_yachiyo_and_araliya_are_estimated_against_an_unknown_window(reader, families) -> None:  # noqa: F811
    for source in ("ya", "ar"):
        for tape in Tape.objects.filter(source=source, role="tape", entries__gt=0):
            body = reader.get(f"/api/tapes/{tape.key}/budget").json()
            assert body["source"] == "estimated" and body["tokens_since_anchor"] > 0, tape.name
            assert body["window"] is None and body["suggested_handoff_pos"] is None


def test_the_session_index_marks_overflowed_tapes_and_shows_reported_context(
    viewer_client, served, settings
) -> None:
    lines = bub_lines(served["samples"] / "session_realistic.jsonl")
    settings.TAPEVIEW_MODEL_WINDOWS = {last_run_model(lines): 5000}
    html = viewer_client.get("/", {"q": "session_realistic"}).content.decode()
    row = html.split("<tbody>")[1].split("</tr>")[0]
    tokens = last_reported_since_last_anchor(lines)
    assert f"{tokens:,}" in row and f"{tokens / 5000:.0%}" in row
    assert 'class="num context warn"' in row and "overflowed" in row


@pytest.mark.parametrize("sort", ["context", "-context"])
def test_the_session_index_sorts_by_context(reader, served, sort) -> None:
    items = reader.get("/api/tapes", sort=sort, limit=500).json()["items"]
    assert len(items) > 3


def test_the_tokenizer_counts_with_no_network(tmp_path) -> None:
    """Every socket refused: bpe-openai's encodings ship inside its package."""
    script = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network used')\n"
        "socket.socket.connect = socket.create_connection = socket.getaddrinfo = refuse\n"
        "from tapeview.tapes import tokenizer\n"
        "print(tokenizer.count('hello world'), tokenizer.count('hello world', 'cl100k_base'))\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120, cwd=root
    )
    assert done.stdout.split() == ["2", "2"]


def test_an_estimate_reads_only_the_newest_entries_and_says_so(reader, served, monkeypatch) -> None:
    from tapeview.tapes import budget

    lines = turns([None, None, None])  # no usage reported: estimated
    k = write_tape(served["samples"], "long_unreported", lines)
    whole = reader.get(f"/api/tapes/{k}/budget").json()
    monkeypatch.setattr(budget, "CAP_ROWS", 4)
    capped = reader.get(f"/api/tapes/{k}/budget").json()
    assert whole["capped"] is False and capped["capped"] is True
    assert 0 < capped["tokens_since_anchor"] < whole["tokens_since_anchor"]


@pytest.mark.parametrize("cap_rows", [2_000, 3])
def test_the_suggested_handoff_read_before_an_append_goes_on_from_it(
    reader, served, settings, monkeypatch, cap_rows
) -> None:
    """The turn starts and reports read before are kept (budget._turns): after each append, and after
    the file is replaced, the suggestion is what a budget worked out from nothing says."""
    from django.core.cache import cache

    from tapeview.tapes import budget

    monkeypatch.setattr(budget, "CAP_ROWS", cap_rows)
    settings.TAPEVIEW_MODEL_WINDOWS = {"openai:gpt-4o": 9000}
    path = served["samples"] / "appended.jsonl"
    prompts = [1000, 2000, 4000, 4400, 4600, 5200, 6000]
    k = write_tape(served["samples"], "appended", turns(prompts[:2]))
    url = f"/api/tapes/{k}/budget"
    seen = []
    for n in range(3, len(prompts) + 1):
        lines = turns(prompts[:n])
        with path.open("a") as f:  # the new turn's lines only, as the agent appends them
            f.write("".join(json.dumps(x) + "\n" for x in lines[len(turns(prompts[: n - 1])) :]))
        kept = reader.get(url).json()
        cache.clear()
        assert kept == reader.get(url).json()
        seen.append(kept["suggested_handoff_pos"])
    starts = [i for i, x in enumerate(lines, 1) if x["payload"].get("name") == "loop.start"]
    # The last boundary within half the window (4,500): after the turn of 4,400 tokens.
    assert seen[-1] == (starts[4] - 1 if cap_rows > 3 else None)
    reader.get(url)  # kept again, then the file is replaced by a shorter one
    path.write_text("".join(json.dumps(x) + "\n" for x in turns([3000, 3500, 8000])))
    replaced = reader.get(url).json()
    cache.clear()
    assert replaced == reader.get(url).json() and replaced["tokens_since_anchor"] == 8000
