"""Deterministic demo Bub tapes directory, and endless realistic turns for the benchmark tape."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .bub_sessions import (
    COMMIT,
    csvkit_main,
    legacy_session,
    notes_memory,
    release_after_reset,
    release_before_reset,
    weatherbot_cache,
    weatherbot_incident,
)
from .bub_tape import (
    CSVKIT,
    DISCORD,
    NOTES,
    TELEGRAM,
    WEATHERBOT,
    BubTape,
    Command,
    Entry,
    Item,
    Script,
    act,
    bash,
    bash_fails,
    bub_line,
    edit,
    handoff,
    pytest_output,
    read,
    say,
    system_prompt,
    turn,
)


def write_bub_demo(root: Path, now: datetime | None = None) -> list[Path]:
    """Write a realistic Bub `tapes/` directory at `root`; the same `now` always gives the same bytes.

    Files of the same names are overwritten and other files are left alone, so clear `root` first
    to rewrite it: the archive's name follows `now`.
    """
    now = now or datetime.now(UTC)
    now = (now if now.tzinfo else now.replace(tzinfo=UTC)).astimezone(UTC)
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random("bub-demo/scripts")
    written: list[Path] = []

    def save(name: str, entries: Iterable[Entry]) -> None:
        with open(root / name, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(bub_line(e) for e in entries)
        written.append(root / name)

    def tape(seed: str, days: float, **kwargs: Any) -> BubTape:
        # A whole second, so the first line of each tape shows the fraction-less ISO form too.
        return BubTape(
            random.Random(f"bub-demo/{seed}"), (now - timedelta(days=days)).replace(microsecond=0), **kwargs
        )

    def session(seed: str, days: float, script: Script, memory: bool = False, **kwargs: Any) -> BubTape:
        t = tape(seed, days, **kwargs)
        entries = t.bootstrap() + (t.open_memory() if memory else [])
        save(t.name + ".jsonl", [*entries, *t.play(script(rng, t.clock))])
        return t

    main = session("csvkit", 3.2, csvkit_main)
    save(main.name + "__sidecar__spill.jsonl", main.sidecar)
    session("weatherbot-cli", 1.3, weatherbot_cache, workspace=WEATHERBOT, model="openai:gpt-4.1")
    session(
        "weatherbot-discord",
        0.25,
        weatherbot_incident,
        workspace=WEATHERBOT,
        session=DISCORD,
        model="openrouter:anthropic/claude-sonnet-4.5",
        sender="402938475610293847",
    )
    session("notes", 45, notes_memory, memory=True, workspace=NOTES, model="openai:gpt-4.1-mini")
    session("legacy", 280, legacy_session, model="openrouter:qwen/qwen3-coder-next", legacy=True)

    # The Telegram session was reset with `,tape.reset archive=true`: its earlier life is a .bak.
    telegram = {"session": TELEGRAM, "model": "openrouter:qwen/qwen3-coder-next", "sender": "528491736"}
    before = tape("telegram-1", 9, **telegram)
    old = [*before.bootstrap(), *before.play(release_before_reset(rng, before.clock))]
    reset_at = before.clock + timedelta(days=6, hours=3, seconds=17)
    stamp = reset_at.strftime("%Y%m%dT%H%M%SZ")
    bak = root.resolve() / f"{before.name}.jsonl.{stamp}.bak"
    sidecar_bak = root.resolve() / f"{before.name}__sidecar__spill.jsonl.{stamp}.bak"
    save(bak.name, old)
    save(sidecar_bak.name, [])  # Bub archives every sidecar with the same stamp, even an empty one.
    after = BubTape(random.Random("bub-demo/telegram-2"), reset_at, **telegram)
    after.tick(0.001, 0.004)
    new = [*after.bootstrap(str(bak)), *after.reset_events(str(sidecar_bak))]
    after.tick(0.00003, 0.0001)
    reset = {"raw": "tape.reset archive=true", "name": "tape.reset", "status": "ok", "elapsed_ms": 3}
    new.append(after.command_event(reset | {"output": f"Archived: {bak}"}))
    after.played = 1  # the first message comes a while after the reset command
    save(after.name + ".jsonl", [*new, *after.play(release_after_reset(rng, after.clock))])
    return sorted(written)


# -- an endless session, for benchmarks


def _random_turn(rng: random.Random) -> Item:
    module = rng.choice(["reader", "writer", "sniff", "stats", "sort", "cli"])
    func = rng.choice(
        ["split_row", "iter_rows", "quote_field", "guess_delimiter", "column_stats", "natural_key"]
    )
    path, test, count = f"src/csvkit_lite/{module}.py", f"tests/test_{module}.py", rng.randint(6, 30)
    body = "".join(
        f"    step_{i} = {rng.choice(['rows', 'len(rows)', 'sorted(rows)'])}\n"
        for i in range(rng.randint(4, 30))
    )
    source = f'def {func}(rows, delimiter=","):\n    """{func.replace("_", " ").capitalize()}."""\n{body}'
    edge = rng.choice(
        ["an empty file", "a trailing newline", "a BOM", "CRLF line endings", "a header-only file"]
    )
    pick = rng.random()
    if pick < 0.25:
        return turn(
            f"how does {func} in {module}.py work?",
            act(
                bash(
                    f"rg -n 'def {func}' src",
                    f'{path}:{rng.randint(5, 200)}:def {func}(rows, delimiter=","):',
                )
            ),
            act(read(path, source), text="Reading the function."),
            say(f"`{func}` walks the rows once; it does not handle {edge} yet."),
        )
    if pick < 0.45:
        tests = pytest_output(rng, {test: count})
        return turn(
            f"run the {module} tests",
            act(bash(f"python -m pytest -q {test}", tests)),
            say(f"All {count} pass."),
        )
    if pick < 0.70:
        name = f"{test}::test_{func}_{edge.split()[-1]}"
        report = f"    def test_{func}():\n>       assert {func}([]) == []\nE       IndexError\n\n{test}:12"
        return turn(
            f"{func} crashes on {edge}, fix it",
            act(read(path, source)),
            act(
                edit(path, "    step_0", "    if not rows:\n        return []\n    step_0"),
                text="Guarding the edge case.",
            ),
            act(
                bash_fails(
                    f"python -m pytest -q {test}", 1, pytest_output(rng, {test: count}, {name: report})
                )
            ),
            act(edit(path, "        return []", "        return [] if delimiter else None")),
            act(bash(f"python -m pytest -q {test}", pytest_output(rng, {test: count}))),
            say(f"Fixed `{func}` for {edge}; {count} tests pass."),
        )
    if pick < 0.82:
        other = rng.choice(["writer", "sniff", "stats"])
        sizes = f"  {rng.randint(40, 300)} {path}\n  {rng.randint(40, 300)} src/csvkit_lite/{other}.py"
        return turn(
            f"compare {module}.py and {other}.py — which one should own the delimiter logic?",
            act(
                read(path, source),
                read(f"src/csvkit_lite/{other}.py", source),
                bash("wc -l src/csvkit_lite/*.py", sizes),
            ),
            say(f"`{other}.py` already guesses delimiters; `{module}.py` should take one as a parameter."),
        )
    if pick < 0.92:
        return turn(
            "what changed since yesterday?",
            act(
                bash("git log --oneline --since=yesterday", f"{COMMIT}\n3c9e1f2 Add stats command"),
                bash("git diff --stat HEAD~2", f" {path} | {count} ++++--\n 1 file changed"),
            ),
            say("Two commits: the quoting fix and the stats command."),
        )
    if pick < 0.96:
        return Command("tape.info")
    return turn(
        rng.choice(["这个函数为什么这么慢？", "テストを追加してください"]),
        say("It copies every row. 用生成器更省内存。"),
    )


def bub_turns(
    rng: random.Random,
    start_id: int = 1,
    start_time: datetime | None = None,
    *,
    handoff_every: int = 40,
    prompt: str | None = None,
) -> Iterator[Entry]:
    """Endless entries of a csvkit-lite CLI session, as Bub 0.5.1 appends them.

    A tape starting at id 1 opens with the bootstrap anchor. Every `handoff_every` turns the
    session hands off, alternately by tool and by `,tape.handoff`. The system prompt defaults to
    the full ~2.5 KB one, which dominates the size of a real tape.
    """
    start_time = start_time or datetime.now(UTC)
    tape = BubTape(
        rng,
        start_time,
        start_id=start_id,
        model="openai:gpt-4.1-mini",
        prompt=prompt or system_prompt(CSVKIT),
    )
    if start_id == 1:
        yield from tape.bootstrap()
    turns = 0
    while True:
        turns += 1
        phase, due = divmod(turns, handoff_every)
        if due:
            item = _random_turn(rng)
        elif phase % 2:
            item = turn(
                "let's wrap up this phase",
                act(handoff(f"phase/{phase}", f"Phase {phase} done")),
                say("Done."),
            )
        else:
            item = Command(f"tape.handoff name=phase/{phase} summary='Phase {phase} done'")
        yield from tape.play([item])
