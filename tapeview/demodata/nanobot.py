"""A demo nanobot 0.3.5 data directory: config, workspace, memory and four sessions (formats/nanobot.md)."""

from __future__ import annotations

import base64
import json
import random
import string
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TELEGRAM, DISCORD, CLI = "telegram:7045512398", "discord:1290457781234567890", "cli:direct"
ALPHABET = string.ascii_lowercase + string.digits
RETRY = "\n\n[Analyze the error above and try a different approach.]"
HIDDEN = "Continue the active task from the working-memory checkpoint above."
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
HELP = """🐈 nanobot commands:
/new — Reset this chat and start a fresh conversation.
/compact — Compact this chat's context and continue the conversation.
/stop — Cancel the active agent turn for this chat.
/status — Display runtime, provider, and channel status.
/model [preset] — Show or switch the active model preset.
/history [n] — Print the last N persisted conversation messages.
/dream — Manually trigger memory consolidation.
/dream-log — Show what the last Dream consolidation changed.
/dream-restore — Revert memory to a previous Dream snapshot.
/skill — List all enabled skills available to the agent.
/help — List available slash commands."""
SKILL = """---
name: proxmox-backup-check
description: Check last night's vzdump jobs on pve1 and the free space on vault's backup dataset.
---

# Proxmox backup check

1. `ssh pve1 'pvesh get /nodes/pve1/tasks --typefilter vzdump --limit 5 --output-format json'`
2. Any task whose status is not `OK` is a failure: report the VM id and the error line.
3. `ssh vault zfs list -o name,used,avail tank/backup/pve`; warn when avail < 500G.
4. Prune with `pvesm prune-backups tank-backup --keep-daily 7` only after the user agrees.
"""
WORKSPACE_FILES = {
    "AGENTS.md": (
        "# Agent Instructions\n\nYou are Lena's home-lab assistant. Be concise and accurate.\n\n"
        "- Hosts: `pve1` (Proxmox), `vault` (TrueNAS, pool `tank`), `docker1` (Docker), `pi4` (Pi-hole).\n"
        "- Ask before anything destructive (prune, rm, zfs destroy, reboots).\n"
    ),
    "SOUL.md": (
        "# Soul\n\nI am nanobot 🐈, a calm sysadmin sidekick.\n\n- Short answers first, details on request.\n"
        "- Show the exact command before running anything that changes state.\n- Never store passwords.\n"
    ),
    "USER.md": (
        "# User Profile\n\n## Basic Information\n\n- **Name**: Lena\n- **Timezone**: Europe/Berlin (UTC+1)\n"
        "- **Language**: English; learning Japanese (JLPT N4); mother-in-law speaks Mandarin\n\n"
        "## Preferences\n\n- Brief answers on Telegram (reads on the phone); code blocks fine on Discord\n"
    ),
    "HEARTBEAT.md": (
        "# Heartbeat Tasks\n\nThis file is checked periodically by your nanobot agent.\n\n"
        "## Active Tasks\n\n<!-- Add your periodic tasks below this line -->\n\n"
        "- Every morning at 07:30, check last night's vzdump jobs on pve1; only message me if one failed.\n"
        "- On Sundays, report free space on vault `tank` if it is above 85 %.\n\n## Completed\n\n"
        "<!-- Move completed tasks here or delete them -->\n"
    ),
    "memory/MEMORY.md": (
        "# Long-term Memory\n\n> Consolidated by Dream\n\n## Home & Infrastructure\n\n"
        "- Uptime Kuma on docker1 behind Caddy at https://status.lab.home (12 monitors)\n"
        "- `vault` = TrueNAS SCALE, pool `tank` 7.1 TB; Proxmox backups in tank/backup/pve, keep-daily 7\n"
        "- UPS: Eaton 5E 850i on vault via USB, NUT name `eaton`; ~40 min runtime at idle load\n"
        "- Pi-hole on pi4 uses the oisd list; status.lab.home is whitelisted\n\n"
        "## Projects & Plans\n\n- Tokyo trip in spring; practising polite Japanese (です/ます)\n"
    ),
    "skills/proxmox-backup-check/SKILL.md": SKILL,
}
# (session key or None, text) of older history.jsonl entries, oldest first.
HISTORY = [
    (None, "Lena asked about: moving the Pi-hole to pi4; ZFS scrub schedule; a ramen recipe. 14 user turns."),
    (TELEGRAM, "## Facts\n- [permanent] Lena prefers short answers on Telegram.\n- [durable] tank: 7.1 TB"),
    (DISCORD, "## Working state [ephemeral]\n- Set up Caddy on docker1 with the shared `caddy` network."),
    (CLI, "Wrote projects/scripts/zfs-report.sh (zpool list + zfs list -o space); ran it: tank 78 % used."),
    (TELEGRAM, "## Facts\n- [durable] UPS is an Eaton 5E 850i on vault via USB (NUT name `eaton`)."),
    (TELEGRAM, "Japanese practice: 電車が遅れています (densha ga okurete imasu) — the train is delayed."),
    (CLI, "## Facts\n- [durable] docker1 runs Debian 12, Docker 27; compose projects live in /srv/<name>."),
    (TELEGRAM, "Heartbeat task added: check vzdump results every morning at 07:30; alert only on failure."),
    (
        DISCORD,
        "[RAW] 2 messages\n[{t}] USER: Why does the Caddy cert for lab.home fail?\n[{t}] ASSISTANT: "
        "It is an internal name: use `tls internal` and trust Caddy's root CA.",
    ),  # fmt: skip
    (TELEGRAM, "Mother-in-law visit next week: translated the guest Wi-Fi note into Chinese (访客 Wi-Fi)."),
    (CLI, "## Facts\n- [durable] pve1 backups go to storage `tank-backup` (NFS from vault)."),
    (DISCORD, "Lena asked how to pin Docker image digests; wrote a renovate.json for /srv on docker1."),
    (TELEGRAM, "## Working state [ephemeral]\n- VM 104 (homeassistant) backup slow; moved it to 02:30."),
    (TELEGRAM, "Japanese: 予約を確認したいです — I'd like to confirm my reservation. Added to notes."),
]


# Archived by /new in the CLI chat, then a scripted append without a session: the last two wait for Dream.
RECENT = [
    (CLI, "Drafted a German out-of-office note; Jonas covers on-call."),
    (CLI, "## Facts\n- [durable] renovate updates docker1's images weekly."),
    (CLI, "Checked NUT shutdown order: pve1 first (60 s), vault last."),
    (None, "Weekly disk report (script): tank 84 % used, 0 errors."),
]


def _dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False)


def _storage_key(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def _usage(rng: random.Random) -> dict[str, Any]:
    prompt, out = rng.randint(26000, 38000), rng.randint(30, 420)
    return {
        "input_tokens": prompt, "output_tokens": out, "total_tokens": prompt + out,
        "cache_read_tokens": int(prompt * rng.uniform(0.7, 0.85)), "cache_write_tokens": 0,
        "reported_tokens": prompt + out, "estimated_tokens": 0, "source": "reported", "generation_ms": 0,
        "measured_output_tokens": 0, "ttft_ms": 0, "timed_requests": 0, "context_tokens": None,
        "request_count": 0,
    }  # fmt: skip


def _exec(out: str) -> str:
    return f"{out}\n\n\nExit code: 0"


class _Session:
    """The rows of one session, stamped as `_save_turn` stamps them: the user row on arrival, the
    rest of the turn a few seconds later and a few milliseconds apart."""

    def __init__(self, rng: random.Random, key: str, start: datetime) -> None:
        self.rng, self.key, self.created, self.clock, self.turn = rng, key, start, start, start
        self.rows: list[dict[str, Any]] = []
        self.pending: list[tuple[str, str]] = []
        self.fresh = False

    def _ts(self, user: bool = False) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(6, 45))
        if self.fresh and not user:
            self.clock += timedelta(milliseconds=self.rng.randint(1800, 9000))
        self.fresh = user
        return self.clock.isoformat()

    def play(self, script: list[tuple]) -> _Session:
        for what, *args in script:
            getattr(self, what)(*args)
        return self

    def user(self, text: str, minutes: float = 0, extra: dict | None = None) -> None:
        self.clock += timedelta(minutes=minutes)
        self.turn = self.clock
        self.rows.append({"role": "user", "content": text, "timestamp": self._ts(user=True), **(extra or {})})

    def hidden(self, minutes: float) -> None:
        self.clock += timedelta(minutes=minutes)
        row = {"role": "user", "content": HIDDEN, "_hidden_history": True}
        self.rows.append(row | {"timestamp": self._ts()})

    def call(self, calls: list[tuple[str, dict]], content: str = "") -> None:
        ids = ["toolu_" + "".join(self.rng.choices(ALPHABET, k=24)) for _ in calls]
        self.pending = [(i, name) for i, (name, _) in zip(ids, calls, strict=True)]
        tool_calls = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": _dumps(a)}}
            for i, (n, a) in zip(ids, calls, strict=True)
        ]
        row = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        self.rows.append(row | {"timestamp": self._ts()})

    def result(self, *contents: str) -> None:
        for (i, name), content in zip(self.pending, contents, strict=True):
            self.rows.append(
                {"role": "tool", "tool_call_id": i, "name": name, "content": content, "timestamp": self._ts()}
            )

    def reply(self, text: str, reasoning: str = "", command: bool = False) -> None:
        row: dict[str, Any] = {"role": "assistant", "content": text}
        self.fresh = self.fresh and not command  # a command reply needs no model: it follows at once
        if reasoning:
            signature = base64.b64encode(self.rng.randbytes(48)).decode()
            row["reasoning_content"] = reasoning
            row["thinking_blocks"] = [{"type": "thinking", "thinking": reasoning, "signature": signature}]
        row["timestamp"] = self._ts()
        if command:
            row["_command"] = True
        else:
            row["latency_ms"] = int((self.clock - self.turn).total_seconds() * 1000)
        self.rows.append(row)

    def deliver(self, text: str, minutes: float) -> None:
        self.clock += timedelta(minutes=minutes)
        row = {"role": "assistant", "content": text, "timestamp": self._ts()}
        self.rows.append(row | {"_channel_delivery": True})

    def lines(self, metadata: dict, archived: int = 0) -> str:
        head = {
            "_type": "metadata", "key": self.key, "created_at": self.created.isoformat(),
            "updated_at": (self.clock + timedelta(milliseconds=8)).isoformat(), "metadata": metadata,
            "last_archived": archived, "last_consolidated": archived,
        }  # fmt: skip
        return "".join(_dumps(r) + "\n" for r in [head, *self.rows])


def _telegram(media: str) -> list[tuple]:
    ups = "battery.charge: 100\nbattery.runtime: 2460\nups.model: 5E 850i\nups.status: OL"
    think = "Prune worked. notes/ups.md does not exist, so I asked NUT on vault. Runtime 2460 s ≈ 41 min."
    return [
        ("user", "vault is at 91 % again 😬 what's eating the space?"),
        ("call", [("exec", {"command": "ssh vault 'zfs list -o name,used,avail -d 2 tank | sort -k2 -h'"})]),
        ("result", _exec("NAME                USED  AVAIL\ntank/media/music    412G   640G\n"
                         "tank/backup/pve     980G   640G\ntank/media/video   4.90T   640G")),
        ("reply", "Video is 4.9 TB of 6.5 TB used. The Proxmox backups take 980 GB — 14 dailies are kept; "
                  "pruning to 7 frees ~450 GB. Shall I?"),
        ("user", "Yes, prune to 7. And check the UPS while you're at it", 7),
        ("call", [("exec", {"command": "ssh pve1 'pvesm prune-backups tank-backup --keep-daily 7'"}),
                  ("read_file", {"path": "notes/ups.md"})]),
        ("result", _exec("pruned 7 backups, freed 449.8 GiB"), "Error: File not found: notes/ups.md" + RETRY),
        ("call", [("exec", {"command": "ssh vault upsc eaton@localhost"})], "Let me ask NUT directly."),
        ("result", _exec(ups)),
        ("reply", "Pruned ✅ 450 GB free again.\nUPS: online, battery 100 %, ~41 min runtime.", think),
        ("user", "Is this the right cable for the UPS?", 185, {"media": [media]}),
        ("reply", "Yes — USB-A to USB-B is what the Eaton 5E's monitoring port takes; NUT sees it fine."),
        ("user", "How do I tell my mother-in-law in Chinese that the Wi-Fi password is on the fridge?", 1290),
        ("reply", "「妈，新的 Wi-Fi 密码贴在冰箱上了。」\nMā, xīn de Wi-Fi mìmǎ tiē zài bīngxiāng shàng le."),
        ("user", "ありがとう！ 🙏", 3),
        ("reply", "どういたしまして 🙂"),
        ("deliver", "⚠️ Nightly vzdump on pve1 failed for VM 104 (homeassistant): `storage 'tank-backup' "
                    "is not online`. vault was rebooting at 02:31.", 640),
    ]  # fmt: skip


def _discord(ws: str) -> list[tuple]:
    compose = (
        "services:\n  uptime-kuma:\n    image: louislam/uptime-kuma:1\n    restart: unless-stopped\n"
        "    volumes:\n      - /srv/uptime-kuma/data:/app/data\n    networks: [caddy]\n"
        "networks:\n  caddy:\n    external: true\n"
    )
    return [
        ("user", "Write me a compose file for Uptime Kuma behind Caddy on docker1"),
        ("call", [("write_file", {"path": "projects/uptime-kuma/compose.yaml", "content": compose})]),
        ("result", f"Successfully wrote {len(compose)} characters to {ws}/projects/uptime-kuma/compose.yaml"),
        ("reply", "Saved to `projects/uptime-kuma/compose.yaml`. Add this to the Caddyfile:\n"
                  "```\nstatus.lab.home {\n  tls internal\n  reverse_proxy uptime-kuma:3001\n}\n```"),
        ("user", "Added the block, reload caddy please", 9),
        ("call", [("exec", {"command": "ssh docker1 docker exec caddy caddy reload -c Caddyfile"})]),
        ("result", _exec('{"level":"info","msg":"using config from file","file":"/etc/caddy/Caddyfile"}\n'
                         '{"level":"info","logger":"admin.api","msg":"load complete"}')),
        ("reply", "Reloaded cleanly. Start Kuma: `docker compose -f /srv/uptime-kuma/compose.yaml up -d`."),
        ("user", "Kuma is up but the push monitors never arrive. Pi-hole?", 21),
        ("call", [("exec", {"command": "ssh pi4 pihole -q status.lab.home"})]),
        ("result", _exec(" Match found in https://big.oisd.nl/:\n   *.lab.home")),
        ("reply", "Yes: a wildcard on the oisd list blocks `*.lab.home`. `pihole -w status.lab.home` "
                  "fixes it — want me to run it?"),
        ("hidden", 17),
        ("user", "Yes please whitelist it. Also, did Kuma pick up all 12 monitors?", 1310),
        ("call", [("exec", {"command": "ssh pi4 pihole -w status.lab.home"}),
                  ("exec", {"command": "ssh docker1 sqlite3 /srv/uptime-kuma/data/kuma.db "
                                       "'select count(*) from monitor where active = 1'"})]),
        ("result", _exec("  [i] Adding status.lab.home to the whitelist...\n  [✓] Reloading DNS lists"),
         _exec("12")),
        ("reply", "Whitelisted, and all 12 monitors are active ✅"),
    ]  # fmt: skip


def _heartbeat_listing() -> str:
    lines = WORKSPACE_FILES["HEARTBEAT.md"].splitlines()
    body = "\n".join(f"{n}| {line}" for n, line in enumerate(lines, 1))
    return f"{body}\n\n(End of file — {len(lines)} lines total)"


def _dream_prompt(entries: list[dict]) -> str:
    history = "\n".join(f"[{e['timestamp']}] {e['content']}" for e in entries)
    return (
        "You are running Dream. Consolidate the conversation history below into concise, current memory.\n\n"
        "## File routing\n\nStore each fact in one canonical location: `SOUL.md` (agent behavior), `USER.md` "
        "(personal attributes), `memory/MEMORY.md` (infrastructure, projects), `skills/<name>/SKILL.md` "
        "(reusable workflows).\n\nAlways strip the bracketed tags from saved memory content.\n\n"
        f"## Conversation History\n{history}"
    )


def write(root: Path, now: datetime) -> list[Path]:
    """Write the data directory at `root`; the same `now` always gives the same bytes."""
    # nanobot stamps naive local times; the readers take them as this host's local time.
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone().replace(tzinfo=None, microsecond=0)
    rng = random.Random("tapeview-demo/nanobot")
    ws = root / "workspace"
    wid = f"{rng.getrandbits(128):032x}"
    ns = root / "sessions" / wid
    written: list[Path] = []

    def save(path: Path, data: str | bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        written.append(path)

    def at(days: float, hour: int, minute: int) -> datetime:
        t = (now - timedelta(days=days)).replace(hour=hour, minute=minute, second=rng.randint(0, 59))
        return t.replace(microsecond=rng.randint(0, 999) * 1000)

    config = {
        "agents": {"defaults": {
            "workspace": str(ws), "model": "anthropic/claude-sonnet-4-5", "provider": "auto",
            "maxTokens": 8192, "contextWindowTokens": 200000, "temperature": 0.1, "maxToolResultChars": 16000,
            "timezone": "Europe/Berlin", "botName": "nanobot", "botIcon": "🐈", "unifiedSession": False,
            "idleCompactAfterMinutes": 15, "dream": {"enabled": True, "intervalH": 2, "modelOverride": None},
        }},
        "channels": {"sendProgress": True, "sendToolHints": True, "showReasoning": True},
        "gateway": {"host": "127.0.0.1", "port": 18790, "heartbeat": {"enabled": True, "intervalS": 1800}},
        "tools": {"exec": {"enable": True, "timeout": 60}, "restrictToWorkspace": False, "mcpServers": {}},
    }  # fmt: skip
    save(root / "config.json", json.dumps(config, indent=2, ensure_ascii=False))
    save(ws / ".nanobot" / "workspace-id", wid + "\n")
    for name, text in WORKSPACE_FILES.items():
        save(ws / name, text)
    media = root / "media" / "telegram" / "AgACAgIAAxkBAAIC8Wd_photo.png"
    save(media, PNG)

    discord = _Session(rng, DISCORD, at(6, 19, 40)).play(_discord(str(ws)))
    marker = next(i for i, r in enumerate(discord.rows) if r.get("_hidden_history"))
    summary = (
        "## Working state\n- Uptime Kuma runs on docker1 behind Caddy (status.lab.home); Pi-hole on pi4 "
        "blocks *.lab.home via oisd, whitelisting proposed.\n\n## Facts\n"
        "- Caddyfile: /srv/caddy/Caddyfile, network `caddy`."
    )
    last_active = discord.rows[marker - 1]["timestamp"]
    telegram = _Session(rng, TELEGRAM, at(3, 8, 12)).play(_telegram(str(media)))
    dream_at = (now - timedelta(hours=5)).replace(minute=11, microsecond=rng.randint(0, 999) * 1000)
    cli = _Session(rng, CLI, at(24, 21, 3))
    cli.clock = now - timedelta(minutes=42)
    cli.play([("user", "/help", 0, {"_command": True}), ("reply", HELP, "", True),
              ("user", "What's on the heartbeat list right now?", 1),
              ("call", [("read_file", {"path": "HEARTBEAT.md"})]),
              ("result", _heartbeat_listing()),
              ("reply", "Two tasks: the 07:30 vzdump check on pve1 (alerts only on failure) and the Sunday "
                        "free-space report for vault `tank` (above 85 %).")])  # fmt: skip

    # history.jsonl: older entries, the Discord compaction, /new archives, then two Dream has not seen.
    stamps = sorted(at(34 - i * 1.6, rng.randint(8, 22), rng.randint(0, 59)) for i in range(len(HISTORY)))
    items = [
        (t, k, c.replace("{t}", (t - timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")))
        for t, (k, c) in zip(stamps, HISTORY, strict=True)
    ]
    ago = [timedelta(hours=52), timedelta(hours=29), timedelta(minutes=150), timedelta(minutes=70)]
    items += [(datetime.fromisoformat(discord.rows[marker]["timestamp"]), DISCORD, summary)] + [
        (now - a, k, c) for a, (k, c) in zip(ago, RECENT, strict=True)
    ]
    history = [
        {"cursor": n, "timestamp": f"{t:%Y-%m-%d %H:%M}", "content": c} | ({"session_key": k} if k else {})
        for n, (t, k, c) in enumerate(items, 1)
    ]
    dreamed = len(history) - 2
    save(ws / "memory" / "history.jsonl", "".join(_dumps(h) + "\n" for h in history))
    save(ws / "memory" / ".cursor", str(len(history)))
    save(ws / "memory" / ".dream_cursor", str(dreamed))

    dream = _Session(rng, f"dream:{dream_at:%Y%m%d-%H%M%S}", dream_at)
    dream.play([
        ("user", _dream_prompt(history[dreamed - 8 : dreamed])),
        ("call", [("edit_file", {"path": "memory/MEMORY.md", "old_text": "## Home & Infrastructure\n",
                                 "new_text": "## Home & Infrastructure\n\n- Uptime Kuma on docker1 behind "
                                             "Caddy at https://status.lab.home (12 monitors)"}),
                  ("edit_file", {"path": "USER.md", "old_text": "- **Language**: English",
                                 "new_text": "- **Language**: English; learning Japanese (JLPT N4)"}),
                  ("write_file", {"path": "skills/proxmox-backup-check/SKILL.md", "content": SKILL})]),
        ("result", "Patch applied:\n- update memory/MEMORY.md (+2/-0)",
         "Patch applied:\n- update USER.md (+1/-1)",
         f"Successfully wrote {len(SKILL)} characters to {ws}/skills/proxmox-backup-check/SKILL.md"),
        ("reply", "Memory updated: added Uptime Kuma to infrastructure, noted the Japanese goal in USER.md, "
                  "created skill proxmox-backup-check from the repeated backup checks."),
    ])  # fmt: skip

    route = {"_compaction_route": {"channel": "discord", "chat_id": DISCORD.split(":", 1)[1], "metadata": {}}}
    sessions = [
        (telegram, {"_compaction_route": {"channel": "telegram", "chat_id": TELEGRAM.split(":", 1)[1],
                                          "metadata": {}}, "_last_usage": _usage(rng)}, 0),
        (discord, route | {"_last_usage": _usage(rng),
                           "_last_summary": {"text": summary, "last_active": last_active}}, marker),
        (cli, {"_last_usage": _usage(rng)}, 0),
        (dream, {}, 0),
    ]  # fmt: skip
    save(ns / ".workspace", str(ws) + "\n")
    save(ns / ".session-files.lock", b"")
    for session, metadata, archived in sessions:
        save(ns / (_storage_key(session.key) + ".jsonl"), session.lines(metadata, archived))
    return written
