"""A demo araliya-bot identity dir: sessions.json, kv.json and transcript.md (formats/araliya.md)."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

SYSTEM_TOKENS = 180  # the agent's instructions, sent with every turn
CONTEXT = 20  # session_chat.rs: the transcript entries a turn sends
RATES = (0.40, 1.60)  # USD per million input and output tokens

WORKING_MEMORY = """# Working memory

- user: Ravi (prefers short answers, code over prose)
- languages: en, 中文 (some), 日本語 (learning)
- project: restic backups of the home server `tanuki` to B2
- open task: verify the systemd timer fires after reboot
"""
# Per session: (agent or None, hours ago, kv entries (key, value), turns); a turn is
# (minutes after the previous turn, user text, seconds the bot took, answer).
SESSIONS: list[tuple[str | None, float, list[tuple[str, str]], list[tuple[float, str, int, str]]]] = [
    ("chat", 30, [("user_name", "ravi"), ("lang", "en"), ("pref.answer_length", "short"),
                  ("project", "tanuki-backups"), ("working_memory", WORKING_MEMORY)], [
        (0, "I want restic to back up /srv on tanuki every night at 02:30. systemd timer or cron?", 4,
         "Use a **systemd timer** — you get logs in the journal and `Persistent=true` catches up after a "
         "reboot.\n\n```ini\n# /etc/systemd/system/restic-backup.timer\n[Timer]\nOnCalendar=*-*-* 02:30:00\n"
         "Persistent=true\n\n[Install]\nWantedBy=timers.target\n```\n\nThe matching `.service` runs "
         "`restic backup /srv --exclude-caches`."),
        (3, "And the retention? I want 7 daily, 4 weekly, 6 monthly.", 3,
         "Add a second `ExecStart` line after the backup:\n\n```sh\nrestic forget --prune \\\n"
         "  --keep-daily 7 --keep-weekly 4 --keep-monthly 6\n```\n\n| flag | keeps |\n|------|-------|\n"
         "| `--keep-daily 7` | last 7 days |\n| `--keep-weekly 4` | last 4 Sundays |\n"
         "| `--keep-monthly 6` | last 6 month-ends |"),
        (11, "Enabled it. `systemctl list-timers` shows restic-backup.timer, next run 02:30 ✅", 2,
         "Good. After the first run, check it with `journalctl -u restic-backup.service -n 20`; the last "
         "line should read `snapshot … saved`."),
        (540, "It ran! snapshot 4f1c2a9e saved, 2.1 GiB added. 顺便问一下，“备份成功了”用日语怎么说？", 3,
         "Nice 🎉\n\n- 中文：备份成功了。\n- 日本語：バックアップが成功しました。\n"
         "  (bakkuappu ga seikō shimashita)"),
        (2, "ありがとう！", 1, "どういたしまして 🙂 I'll remember the timer is verified."),
    ]),
    ("chat", 7, [("user_name", "ravi"), ("lang", "en"), ("topic", "rust-borrowck")], [
        (0, "Rust says `cannot borrow `self.cache` as mutable because it is also borrowed as immutable`. "
            "Code: `let v = self.cache.get(&k); self.cache.insert(k2, v.clone());`", 5,
         "`v` still borrows `self.cache` when you insert. Clone first, then insert:\n\n```rust\n"
         "let v = self.cache.get(&k).cloned();\nif let Some(v) = v {\n    self.cache.insert(k2, v);\n}\n```"),
        (4, "That compiles, thanks. Is `.cloned()` expensive for a `String`?", 2,
         "It allocates once per call. If values are large and shared, store `Arc<str>` instead and clone the "
         "`Arc` — that is just a counter increment."),
    ]),
    (None, 0.5, [], []),
]  # fmt: skip


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _uuid7(rng: random.Random, t: datetime) -> str:
    ms = f"{int(t.timestamp() * 1000):012x}"
    rand = f"{rng.getrandbits(12):03x}"
    variant = f"{rng.choice('89ab')}{rng.getrandbits(12):03x}"
    return f"{ms[:8]}-{ms[8:]}-7{rand}-{variant}-{rng.getrandbits(48):012x}"


def _pretty(obj: object) -> str:
    """serde_json::to_string_pretty: two spaces, raw UTF-8, no newline at the end."""
    return json.dumps(obj, ensure_ascii=False, indent=2)


def _spend(spent: list[int], cost: float, stamp: str) -> dict:
    return {
        "total_input_tokens": spent[0],
        "total_output_tokens": spent[1],
        "total_cached_tokens": 0,
        "total_cost_usd": cost,
        "last_updated": stamp,
    }


def _entry(role: str, stamp: str, content: str) -> str:
    """One entry as transcript_append writes it: header, blank line, content, blank line."""
    return f"### {role} \u2014 {stamp}\n\n{content.strip()}\n\n"


def write(root: Path, now: datetime) -> list[Path]:
    """Write `<root>/bot-pkey<hex>/memory/`; the same `now` always gives the same bytes."""
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC).replace(microsecond=0)
    rng = random.Random("tapeview-demo/araliya")
    pkey = hashlib.sha256(rng.randbytes(32)).hexdigest()[:8]  # first 8 hex of sha256(ed25519 public key)
    memory = root / f"bot-pkey{pkey}" / "memory"
    written: list[Path] = []

    def save(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)

    infos = {}
    for agent, hours, kv, turns in SESSIONS:
        created = now - timedelta(hours=hours, seconds=rng.randint(0, 3599))
        sid = _uuid7(rng, created)
        infos[sid] = {"session_id": sid, "created_at": _ts(created), "store_types": ["basic_session"],
                      "last_agent": agent}  # fmt: skip
        clock, transcript = created + timedelta(seconds=rng.randint(2, 20)), []
        spent = [0, 0]  # input, output tokens: about four characters a token
        for minutes, question, seconds, answer in turns:
            clock += timedelta(minutes=minutes, seconds=rng.randint(0, 59))
            transcript.append(_entry("user", _ts(clock), question))
            spent[0] += SYSTEM_TOKENS + len("".join(transcript[-CONTEXT:])) // 4
            clock += timedelta(seconds=seconds)
            transcript.append(_entry("assistant", _ts(clock), answer))
            spent[1] += len(answer) // 4
        # The bot files what it learnt while the chat ran: keys get stamps spread over the session.
        span = max((clock - created).total_seconds(), 1)
        stamps = sorted(created + timedelta(seconds=rng.uniform(0, span)) for _ in kv)
        entries = [{"key": k, "value": v, "ts": _ts(t)} for (k, v), t in zip(kv, stamps, strict=True)]
        folder = memory / "sessions" / sid
        save(folder / "kv.json", _pretty({"cap": 200, "entries": entries}))
        save(folder / "transcript.md", "".join(transcript))
        # What araliya's accumulate_spend keeps (crates/araliya-memory), priced at gpt-4.1-mini's rates.
        cost = (spent[0] * RATES[0] + spent[1] * RATES[1]) / 1_000_000
        save(folder / "spend.json", _pretty(_spend(spent, cost, _ts(clock))))
    # sessions.json is a Rust HashMap: its key order changes on every rewrite.
    order = sorted(infos)
    rng.shuffle(order)
    save(memory / "sessions.json", _pretty({"sessions": {sid: infos[sid] for sid in order}}))
    return written
