"""The scripted demo Bub sessions: real-looking work on a few repositories, as data for the recorder."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from .bub_tape import (
    Call,
    Command,
    Item,
    Pause,
    Turn,
    act,
    bash,
    bash_fails,
    edit,
    handoff,
    pytest_output,
    read,
    say,
    tool_error,
    trips_output,
    turn,
    write,
)


def _ls_date(when: datetime) -> str:
    return f"{when:%b} {when.day:>2} {when:%H:%M}"


LS_CSVKIT = """\
total 40
drwxr-xr-x 6 ana ana 4096 {day} .
drwxr-xr-x 9 ana ana 4096 {day} ..
drwxr-xr-x 8 ana ana 4096 {day} .git
-rw-r--r-- 1 ana ana  112 {day} .gitignore
-rw-r--r-- 1 ana ana  311 {day} AGENTS.md
-rw-r--r-- 1 ana ana 1480 {day} CHANGELOG.md
-rw-r--r-- 1 ana ana  902 {day} README.md
-rw-r--r-- 1 ana ana  688 {day} pyproject.toml
drwxr-xr-x 3 ana ana 4096 {day} src
drwxr-xr-x 3 ana ana 4096 {day} tests"""

README = """\
# csvkit-lite

A tiny, dependency-free CSV toolkit: `csvkit-lite cat`, `stats` and `sort`.

    pip install csvkit-lite
    csvkit-lite cat trips.csv --format tsv

Rows are parsed by `csvkit_lite.reader.split_row`; see AGENTS.md for how we work."""

PYPROJECT = """\
[project]
name = "csvkit-lite"
version = "0.3.2"
requires-python = ">=3.10"
dependencies = []

[project.scripts]
csvkit-lite = "csvkit_lite.cli:main"

[tool.pytest.ini_options]
testpaths = ["tests"]"""

READER = '''\
"""Read CSV rows without the csv module (kept dependency-free on purpose)."""

from collections.abc import Iterable, Iterator


def split_row(line: str, delimiter: str = ",") -> list[str]:
    return line.rstrip("\\r\\n").split(delimiter)


def iter_rows(lines: Iterable[str], delimiter: str = ",") -> Iterator[list[str]]:
    for line in lines:
        if line.strip():
            yield split_row(line, delimiter)
'''

SPLIT_V1 = """    return line.rstrip("\\r\\n").split(delimiter)"""

SPLIT_V2 = """\
    fields, field, quoted = [], "", False
    for ch in line.rstrip("\\r\\n"):
        if ch == '"':
            quoted = not quoted
        elif ch == delimiter and not quoted:
            fields.append(field)
            field = ""
        else:
            field += ch
    fields.append(field)
    return fields"""

LOOP_V2 = """    for ch in line.rstrip("\\r\\n"):"""

LOOP_V3 = """\
    text = line.rstrip("\\r\\n")
    for i, ch in enumerate(text):"""

QUOTE_V2 = """\
        if ch == '"':
            quoted = not quoted"""

QUOTE_V3 = """\
        if ch == '"' and quoted and text[i + 1 : i + 2] == '"':
            field += '"'
            i += 1
        elif ch == '"':
            quoted = not quoted"""

SPLIT_V3 = """\
    fields, field, quoted = [], "", False
    text, i = line.rstrip("\\r\\n"), 0
    while i < len(text):
        ch = text[i]
        if ch == '"' and quoted and text[i + 1 : i + 2] == '"':
            field += '"'
            i += 1
        elif ch == '"':
            quoted = not quoted
        elif ch == delimiter and not quoted:
            fields.append(field)
            field = ""
        else:
            field += ch
        i += 1
    fields.append(field)
    return fields"""

QUOTED_FAILURE = """\
    def test_quoted_field_with_comma():
>       assert split_row('a,"Main St, Apt 4",c') == ["a", "Main St, Apt 4", "c"]
E       AssertionError: assert ['a', '"Main St', ' Apt 4"', 'c'] == ['a', 'Main St, Apt 4', 'c']
E         At index 1 diff: '"Main St' != 'Main St, Apt 4'

tests/test_reader.py:41: AssertionError"""

ESCAPED_FAILURE = '''\
    def test_escaped_quote():
>       assert split_row('a,"say ""hi""",c') == ["a", 'say "hi"', "c"]
E       assert ['a', {got}, 'c'] == ['a', 'say "hi"', 'c']
E         At index 1 diff: {got} != 'say "hi"'

tests/test_reader.py:48: AssertionError'''

CLI = """\
import argparse

from .reader import iter_rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="csvkit-lite")
    parser.add_argument("command", choices=["cat", "stats", "sort"])
    parser.add_argument("path")
    parser.add_argument("--format", default="csv")
    args = parser.parse_args(argv)
    with open(args.path, encoding="utf-8") as f:
        rows = list(iter_rows(f))
"""

FORMAT_OPTION = '    parser.add_argument("--format", default="csv")'
DELIMITER_OPTION = FORMAT_OPTION + '\n    parser.add_argument("-d", "--delimiter", default=",")'

CSVKIT_TESTS = {"tests/test_reader.py": 21, "tests/test_writer.py": 15, "tests/test_cli.py": 12}
QUOTED_TEST = "tests/test_reader.py::test_quoted_field_with_comma"
ESCAPED_TEST = "tests/test_reader.py::test_escaped_quote"
READER_PATH = "src/csvkit_lite/reader.py"
COMMIT = "7d2c4a9 Keep quoted delimiters in split_row; add --delimiter"


def csvkit_main(rng: random.Random, day: datetime) -> list[Item]:
    """Explore csvkit-lite, fix the quoted-field bug, look at a big output, add an option, commit."""
    before = {QUOTED_TEST: QUOTED_FAILURE, ESCAPED_TEST: ESCAPED_FAILURE.format(got='\'"say ""hi"""\'')}
    escaped = {ESCAPED_TEST: ESCAPED_FAILURE.format(got="'say hi'")}
    reader_v2b = SPLIT_V2.replace(LOOP_V2, LOOP_V3).replace(QUOTE_V2, QUOTE_V3)
    defs = (
        '6:def split_row(line: str, delimiter: str = ",") -> list[str]:\n10:def iter_rows(lines, delimiter):'
    )
    quote_tests = "tests/test_reader.py:40:def test_quoted_field_with_comma():\n47:def test_escaped_quote():"
    git_log = (
        "3c9e1f2 Add stats command\n8b41d07 Sort: natural order for numeric columns\n51aa6e0 Release 0.3.2"
    )
    commit = f"[main {COMMIT}]\n 3 files changed, 31 insertions(+), 4 deletions(-)"
    return [
        turn(
            "what is in this repo?",
            act(
                bash("ls -la", LS_CSVKIT.format(day=_ls_date(day - timedelta(days=2, hours=5)))),
                read("README.md", README),
                read("pyproject.toml", PYPROJECT),
                text="Let me look around first.",
            ),
            say(
                "csvkit-lite 0.3.2: a dependency-free CSV toolkit with a `csvkit-lite` CLI (`cat`, `stats`, "
                "`sort`). Parsing lives in `src/csvkit_lite/reader.py`, tests in `tests/`."
            ),
        ),
        turn(
            "how does the reader split rows? 有没有测试覆盖引号的情况？",
            act(bash("rg -n 'def ' src/csvkit_lite/reader.py", defs)),
            act(read(READER_PATH, READER), bash("rg -n 'quote' tests/", quote_tests)),
            say(
                '`split_row` just calls `str.split(delimiter)`, so `"Main St, Apt 4"` is cut in two. '
                "测试里有两个关于引号的用例：`test_quoted_field_with_comma` 和 `test_escaped_quote`，"
                "按现在的实现它们应该会失败。"
            ),
        ),
        turn(
            "run the tests and show me the last commits",
            act(
                bash_fails("python -m pytest -q", 1, pytest_output(rng, CSVKIT_TESTS, before)),
                bash("git log --oneline -3", git_log),
            ),
            say("46 passed, 2 failed: both quoting tests. The last commit is 3c9e1f2 “Add stats command”."),
        ),
        Command("tape.info"),
        turn(
            "good, let's close the exploration phase",
            act(
                handoff(
                    "phase/explore-done", "Explored csvkit-lite: split_row ignores quotes; 2 failing tests"
                )
            ),
            say("Exploration phase handed off."),
        ),
        Command("tape.handoff name=phase/fix-quoting summary='Keep quoted delimiters and escaped quotes'"),
        turn(
            "fix split_row so quoted fields keep their commas, then run the tests",
            act(read(READER_PATH, READER), text="I'll read the current implementation first."),
            act(
                edit(READER_PATH, SPLIT_V1, SPLIT_V2),
                text="Replacing the plain split with a small state machine.",
            ),
            act(bash_fails("python -m pytest -q", 1, pytest_output(rng, CSVKIT_TESTS, escaped))),
            act(
                edit(READER_PATH, LOOP_V2, LOOP_V3),
                edit(READER_PATH, QUOTE_V2, QUOTE_V3),
                text="A doubled quote inside a quoted field is an escaped quote; handling that too.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS))),
            act(
                edit(READER_PATH, reader_v2b, SPLIT_V3),
                text="Green, but `i += 1` inside a for loop is a no-op that passes by accident. "
                "Switching to an explicit index so the second quote is really skipped.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS))),
            say('Fixed: `split_row` keeps quoted delimiters and turns `""` into `"`. All 48 tests pass.'),
        ),
        turn(
            "run the CLI on the March trips export and check nothing gets split wrong",
            act(
                bash(
                    "python -m csvkit_lite.cli cat tests/data/trips_2026-03.csv --format tsv",
                    trips_output(rng, 560),
                )
            ),
            act(Call("spill_read", {}), text="The output was spilled; reading the first chunk."),
            say(
                "All 560 rows have 6 columns, 0 malformed; `Main St, Apt 4` and `Kings Rd, North` stay whole."
            ),
        ),
        Command("model openai:gpt-4.1-mini"),
        turn(
            "now add a --delimiter option to the CLI and document it in the README",
            act(read("src/csvkit_lite/cli.py", CLI), read("README.md", README)),
            act(
                edit("src/csvkit_lite/cli.py", FORMAT_OPTION, DELIMITER_OPTION),
                edit(
                    "src/csvkit_lite/cli.py",
                    "rows = list(iter_rows(f))",
                    "rows = list(iter_rows(f, args.delimiter))",
                ),
                edit(
                    "README.md",
                    "--format tsv\n",
                    "--format tsv\n    csvkit-lite stats export.csv --delimiter ';'\n",
                ),
            ),
            act(bash("python -m pytest -q", pytest_output(rng, CSVKIT_TESTS | {"tests/test_cli.py": 13}))),
            say("Added `-d/--delimiter` (default `,`), passed to `iter_rows`, documented. 49 tests pass."),
            fails="overflow",
        ),
        turn(
            "commit it",
            act(
                bash(
                    "git add -A && git commit -m 'Keep quoted delimiters in split_row; add --delimiter'",
                    commit,
                )
            ),
            act(bash("git log --oneline -2", f"{COMMIT}\n3c9e1f2 Add stats command")),
            say("Committed as 7d2c4a9."),
        ),
        Command("tape.search query=delimiter"),
        turn(
            "用中文总结一下今天做了什么",
            say(
                "今天的工作：\n1. 浏览了 csvkit-lite 仓库，发现 `split_row` 没有处理引号；\n"
                '2. 修复了带逗号的引号字段和转义引号 `""`，48 个测试全部通过；\n'
                "3. 用 3 月的行程数据验证了 CLI 输出（560 行，没有错误）；\n"
                "4. 新增 `--delimiter` 选项并更新 README，提交为 7d2c4a9。"
            ),
        ),
        turn(
            "great, hand off this phase",
            act(
                handoff(
                    "phase/delimiter-done", "split_row handles quotes; --delimiter added; committed 7d2c4a9"
                )
            ),
            say("Done — the next phase starts from a clean context."),
        ),
    ]


CHANGELOG = """\
# Changelog

## 0.3.2

- Fix: `sort` crashed on empty files."""

CHANGELOG_040 = """\
## 0.4.0

- New: `stats` command.
- New: `--delimiter` option and `--format tsv`.
- Fix: quoted fields with commas and escaped quotes are parsed correctly.

## 0.3.2"""

SINCE_030 = f"""\
{COMMIT}
3c9e1f2 Add stats command
8b41d07 Sort: natural order for numeric columns
e02b9c1 CLI: --format tsv
b7f3a55 Reader: skip blank lines"""

GH_RUNS = """\
STATUS  TITLE                                       WORKFLOW  BRANCH  EVENT  ID
X       Keep quoted delimiters in split_row; add…  ci        main    push   9912345
✓       Add stats command                           ci        main    push   9911872
✓       Sort: natural order for numeric columns     ci        main    push   9907310"""

GH_FAILED = """\
{ci} src/csvkit_lite/cli.py:12:111: E501 Line too long (118 > 110)
{ci} Found 1 error.
{ci} ##[error]Process completed with exit code 1."""

BUILD = """\
* Creating isolated environment: venv+pip...
* Installing packages in isolated environment:
  - hatchling
* Building sdist...
* Building wheel from sdist
* Building wheel...
Successfully built csvkit_lite-0.4.0.tar.gz and csvkit_lite-0.4.0-py3-none-any.whl"""

UPLOAD = """\
Uploading distributions to https://upload.pypi.org/legacy/
Uploading csvkit_lite-0.4.0-py3-none-any.whl
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 9.1/9.1 kB • 00:00 • ?
Uploading csvkit_lite-0.4.0.tar.gz
100% ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━ 8.4/8.4 kB • 00:00 • ?

View at:
https://pypi.org/project/csvkit-lite/0.4.0/"""

RELEASE_NOTES_JA = """\
csvkit-lite 0.4.0 リリースノート 🎉

- 新機能: `stats` コマンド
- 新機能: `--delimiter` オプション（区切り文字を指定）と `--format tsv`
- 修正: カンマや `""` を含む引用符付きフィールドを正しく読み込みます"""


def release_before_reset(rng: random.Random, day: datetime) -> list[Item]:
    """The Telegram group tracking the csvkit-lite 0.4 release, before the tape was reset."""
    failed = GH_FAILED.format(ci=f"lint\truff check\t{day - timedelta(minutes=47):%Y-%m-%dT%H:%M:%SZ}")
    help_option = DELIMITER_OPTION.replace('default=",")', 'default=",", help="field separator")')
    return [
        turn("hi bub, please keep track of the v0.4 release for us", say("Sure — what should be in 0.4?")),
        turn(
            "what has been merged since v0.3.0?",
            act(
                bash("git log v0.3.0..HEAD --oneline", SINCE_030),
                text="Checking the history since the last tag.",
            ),
            say(
                "Five commits: `stats`, `--format tsv`, `--delimiter`, natural sort and blank-line skipping."
            ),
        ),
        Command(
            "tape.handoff name=topic/release-0.4 summary='0.4: stats, --delimiter, --format tsv, quoting fix'"
        ),
        turn(
            "draft the CHANGELOG entry",
            act(read("CHANGELOG.md", CHANGELOG)),
            act(edit("CHANGELOG.md", "## 0.3.2", CHANGELOG_040)),
            say("Drafted the 0.4.0 entry at the top of CHANGELOG.md."),
        ),
        turn(
            "CI is red on main, can you check?",
            act(
                bash("gh run list --limit 3", GH_RUNS),
                bash("gh run view 9912345 --log-failed", failed),
                text="Looking at the latest runs and the failed log.",
            ),
            act(edit("src/csvkit_lite/cli.py", DELIMITER_OPTION, help_option)),
            act(bash("ruff check src tests", "All checks passed!")),
            say("A lint failure (E501 in cli.py line 12). Fixed; `ruff check` is clean. Push when ready."),
        ),
        Command("tape.info"),
    ]


def release_after_reset(rng: random.Random, day: datetime) -> list[Item]:
    push = "GIT_SSH_COMMAND='ssh -i ~/.ssh/csvkit_deploy' git push git@github.com:ana/csvkit-lite.git v0.4.0"
    no_https = "fatal: could not read Username for 'https://github.com': No such device or address"
    return [
        turn("リリースノートを日本語でも書いてもらえますか？短めでお願いします 🙏", say(RELEASE_NOTES_JA)),
        turn(
            "great, tag v0.4.0 and push it",
            act(
                bash("git tag -a v0.4.0 -m 'csvkit-lite 0.4.0'", ""),
                bash_fails("git push origin v0.4.0", 128, no_https),
            ),
            say("v0.4.0 is tagged locally; the push failed (no HTTPS credentials). Is there a deploy key?"),
        ),
        turn(
            "use the deploy key in ~/.ssh/csvkit_deploy",
            act(bash(push, "To github.com:ana/csvkit-lite.git\n * [new tag]         v0.4.0 -> v0.4.0")),
            say("Pushed v0.4.0 🎉"),
        ),
        turn(
            "publish it to PyPI",
            act(bash("rm -rf dist && python -m build", BUILD), text="Building a fresh sdist and wheel."),
            act(bash("twine upload dist/*", UPLOAD)),
            say("csvkit-lite 0.4.0 is on PyPI: https://pypi.org/project/csvkit-lite/0.4.0/ ✅"),
        ),
        turn(
            "close out the release topic",
            act(
                handoff(
                    "topic/release-0.4-done", "0.4.0 tagged, pushed with the deploy key, published to PyPI"
                )
            ),
            say("Release topic handed off ✅"),
        ),
        turn(
            "ありがとう！来週は stats コマンドの性能を見よう",
            say("了解です！大きな CSV のサンプルを用意しておきますね 📊"),
        ),
    ]


JOURNAL = """\
{at} pi weatherbot[1822]: INFO forecast request city=Lisbon user=402938475610293847
{at} pi weatherbot[1822]: WARNING open-meteo returned 400: Cannot initialize WeatherVariable from \
invalid String value ['temperature_2m_max', 'temperature_2m_min', 'precipitation_sum']
{at} pi weatherbot[1822]: ERROR Task exception was never retrieved
Traceback (most recent call last):
  File "/home/ana/src/weatherbot/src/weatherbot/bot.py", line 64, in forecast
    days = await provider.daily(city)
  File "/home/ana/src/weatherbot/src/weatherbot/providers/openmeteo.py", line 31, in daily
    return parse_daily(resp.json()["daily"])
KeyError: 'daily'"""

OPENMETEO = '''\
"""Open-Meteo client."""

import httpx

DAILY = ["temperature_2m_max", "temperature_2m_min", "precipitation_sum"]


async def daily(city):
    lat, lon = await geocode(city)
    params = {"latitude": lat, "longitude": lon, "daily": str(DAILY), "timezone": "auto"}
    async with httpx.AsyncClient(timeout=10) as client:
        resp = await client.get("https://api.open-meteo.com/v1/forecast", params=params)
    return parse_daily(resp.json()["daily"])
'''

SERVICE_STATUS = """\
● weatherbot.service - Discord weather bot
     Loaded: loaded (/home/ana/.config/systemd/user/weatherbot.service; enabled)
     Active: active (running) since {at} UTC; 2s ago
   Main PID: 2417 (python)"""

REGRESSION_TEST = """\
def test_daily_params_are_comma_separated(fake_client):
    run(daily("Lisbon"))
    assert fake_client.params["daily"] == "temperature_2m_max,temperature_2m_min,precipitation_sum"


def test_parse_daily():"""

RATELIMIT = '''\
"""Token bucket shared by all commands."""

import time


class Bucket:
    def __init__(self, rate: int = 30, per: float = 60.0) -> None:
        self.rate, self.per = rate, per
        self.tokens, self.stamp = float(rate), time.monotonic()
'''

POSTMORTEM = """\
# /forecast returned nothing ({day})

- Impact: /forecast failed for about ten hours.
- Cause: 4e1a9c2 sent `daily` as `str(list)`; Open-Meteo answered 400.
- Fix: join the fields with commas; regression test added.
- Follow-up: alert on the provider's 4xx rate.
"""

I18N_EN = '    "en": {"forecast": "Forecast for {city}", "max": "max", "min": "min", "rain": "rain"},'
I18N_JA = '    "ja": {"forecast": "{city}の天気予報", "max": "最高", "min": "最低", "rain": "降水量"},'
WEATHER_TESTS = {"tests/test_openmeteo.py": 6, "tests/test_i18n.py": 4, "tests/test_ratelimit.py": 3}


def weatherbot_incident(rng: random.Random, day: datetime) -> list[Item]:
    """A Discord channel: a broken /forecast, a fix, a provider outage, a context error, Japanese replies."""
    broke = day - timedelta(hours=9, minutes=20)
    blame = f'4e1a9c2 (ana {broke:%Y-%m-%d %H:%M:%S} +0000 23)     params = {{..., "daily": str(DAILY), ...}}'
    status = SERVICE_STATUS.format(at=f"{day + timedelta(minutes=9):%a %Y-%m-%d %H:%M:%S}")
    openmeteo = "src/weatherbot/providers/openmeteo.py"
    postmortem = f"docs/postmortems/{day:%Y-%m-%d}-forecast-400.md"
    overloaded = (
        "Error code: 529 - {'type': 'error', 'error': {'type': 'overloaded_error', 'message': 'Overloaded'}}"
    )
    return [
        turn(
            "the bot stopped answering /forecast since this morning 😕",
            act(
                bash(
                    "journalctl --user -u weatherbot --since today -n 9 --no-pager",
                    JOURNAL.format(at=f"{day - timedelta(minutes=13):%b %d %H:%M:%S}"),
                ),
                text="Checking the service logs first.",
            ),
            act(read(openmeteo, OPENMETEO), bash(f"git blame -L 23,23 {openmeteo}", blame)),
            say(
                "Found it 🔍 Since 4e1a9c2 the request sends `daily=['temperature_2m_max', …]` (`str(DAILY)` "
                'instead of `",".join(DAILY)`). Open-Meteo answers 400 without `daily`, hence the KeyError. '
                "Shall I fix it and add a regression test?"
            ),
        ),
        turn(
            "yes please, fix it and add a regression test",
            act(edit(openmeteo, '"daily": str(DAILY)', '"daily": ",".join(DAILY)')),
            act(edit("tests/test_openmeteo.py", "def test_parse_daily():", REGRESSION_TEST)),
            act(
                bash(
                    "python -m pytest -q tests/test_openmeteo.py",
                    pytest_output(rng, {"tests/test_openmeteo.py": 6}),
                )
            ),
            act(
                bash(
                    "systemctl --user restart weatherbot && systemctl --user status weatherbot | head -4",
                    status,
                )
            ),
            say(
                "Fixed and restarted ✅ /forecast works again; the new test pins the comma-separated `daily`."
            ),
        ),
        Command(
            "tape.handoff name=incident/forecast-400 summary='daily param was str(list); fixed and tested'"
        ),
        turn(
            "can you also check that the rate limiter still lets 30 requests per minute through?",
            fails="provider",
            error=overloaded,
        ),
        turn(
            "try again please 🙏",
            act(read("src/weatherbot/ratelimit.py", RATELIMIT)),
            act(
                bash(
                    "python -m pytest -q tests/test_ratelimit.py",
                    pytest_output(rng, {"tests/test_ratelimit.py": 3}),
                )
            ),
            say(
                "The bucket still allows 30 requests per 60 s; the burst test passes. Nothing changed there."
            ),
        ),
        turn(
            "continue from the incident/forcast-400 handoff and write a short postmortem",
            fails="context",
            error="Anchor 'incident/forcast-400' was not found.",
        ),
        turn(
            "oops, typo: continue from incident/forecast-400 and write the postmortem",
            act(
                write(postmortem, POSTMORTEM.format(day=f"{day:%Y-%m-%d}")),
                text="Writing it under docs/postmortems/.",
            ),
            say(f"Postmortem written to {postmortem} 📝"),
        ),
        turn(
            "天気予報のメッセージを日本語でも返せるようにしてください（/forecast lang:ja）",
            act(read("src/weatherbot/i18n.py", f"MESSAGES = {{\n{I18N_EN}\n}}\n")),
            act(edit("src/weatherbot/i18n.py", I18N_EN, f"{I18N_EN}\n{I18N_JA}")),
            act(bash("python -m pytest -q", pytest_output(rng, WEATHER_TESTS))),
            say("対応しました ☀️ `/forecast lang:ja` で「東京の天気予報 — 最高 18°」のように返します。"),
        ),
        turn("thanks! 👍", say("Anytime 👋")),
    ]


CACHE = '''\
"""A small TTL cache for provider calls."""

import time
from typing import Any


class TTLCache:
    def __init__(self, ttl: float = 600.0) -> None:
        self.ttl, self.items = ttl, {}

    def get(self, key: str) -> Any | None:
        hit = self.items.get(key)
        if hit and hit[0] > time.time():
            return hit[1]
        return None

    def put(self, key: str, value: Any) -> None:
        self.items[key] = (time.time() + self.ttl, value)
'''

CACHE_TEST = """\
from weatherbot.cache import TTLCache


def test_entry_expires(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr("time.monotonic", lambda: now[0])
    cache = TTLCache(ttl=600)
    cache.put("Lisbon", 1)
    now[0] += 601
    assert cache.get("Lisbon") is None
"""

EXPIRY_FAILURE = """\
    def test_entry_expires(monkeypatch):
        ...
>       assert cache.get("Lisbon") is None
E       AssertionError: assert 1 is None

tests/test_cache.py:10: AssertionError"""

CACHED_DAILY = """\
_cache = TTLCache(ttl=600)


async def daily(city):
    if (hit := _cache.get(city)) is not None:
        return hit"""

CITIES = """\
    612 city=Lisbon
    388 city=Porto
    201 city=Tokyo
    133 city=Berlin
     74 city=Faro"""


def weatherbot_cache(rng: random.Random, day: datetime) -> list[Item]:
    """A CLI session adding a cache to weatherbot, past a missing file and a failing test."""
    files = WEATHER_TESTS | {"tests/test_cache.py": 3}
    failing = {"tests/test_cache.py::test_entry_expires": EXPIRY_FAILURE}
    missing = tool_error(
        "fs_read", "[Errno 2] No such file or directory: 'src/weatherbot/cache.py'", "FileNotFoundError"
    )
    log = "~/.local/state/weatherbot/bot.log.1"
    commit = "[main 91c0b3e] Cache Open-Meteo forecasts for 10 minutes\n 3 files changed, 38 insertions(+)"
    return [
        turn(
            "add a 10-minute cache to the forecast fetcher so we stop hitting the API on every /forecast",
            act(
                read(
                    "src/weatherbot/providers/openmeteo.py",
                    OPENMETEO.replace("str(DAILY)", '",".join(DAILY)'),
                ),
                Call("fs_read", {"path": "src/weatherbot/cache.py"}, missing),
                text="Checking the provider and whether a cache module exists.",
            ),
            act(write("src/weatherbot/cache.py", CACHE), text="No cache module yet; creating one."),
            act(
                edit("src/weatherbot/providers/openmeteo.py", "async def daily(city):", CACHED_DAILY),
                write("tests/test_cache.py", CACHE_TEST),
            ),
            act(bash_fails("python -m pytest -q", 1, pytest_output(rng, files, failing))),
            act(
                edit("src/weatherbot/cache.py", "time.time()", "time.monotonic()"),
                text="The test patches time.monotonic; a cache should not follow wall-clock jumps anyway.",
            ),
            act(bash("python -m pytest -q", pytest_output(rng, files))),
            say("Added `TTLCache` (10 min, monotonic clock) in front of `daily()`. 16 tests pass."),
        ),
        Command("tape.info"),
        turn(
            "how much would it have saved yesterday?",
            act(
                bash(f"grep -c 'GET https://api.open-meteo.com' {log}", "1437"),
                bash(f"grep -o 'city=[A-Za-z]*' {log} | sort | uniq -c | sort -rn | head -5", CITIES),
            ),
            say("1437 API calls yesterday, 82% for five cities. A 10-minute cache caps that near 720."),
        ),
        turn(
            "nice. commit it with a good message",
            act(bash("git add -A && git commit -m 'Cache Open-Meteo forecasts for 10 minutes'", commit)),
            say("Committed as 91c0b3e."),
        ),
        turn(
            "hand off; next we refactor the slash commands",
            act(handoff("phase/cache-done", "TTL cache in front of Open-Meteo (10 min); committed 91c0b3e")),
            say("Handed off. Ready for the slash-command refactor."),
        ),
    ]


def notes_memory(rng: random.Random, day: datetime) -> list[Item]:
    """Six weeks of notes kept in the memory zone of bub PR #33: saves, dailies, a prune, a clear."""

    def memory(prompt: str, tool: str, answer: str, **args: Any) -> Turn:
        return turn(prompt, act(Call(tool, args)), say(answer))

    return [
        memory(
            "remember: I prefer Python 3.12, type hints everywhere, and pytest over unittest",
            "memory_save",
            "Saved to long-term memory.",
            content="Prefers Python 3.12, type hints everywhere, pytest over unittest.",
        ),
        Pause(1),
        memory(
            "note for today: the csvkit-lite reader is 1.8x faster after the split_row rewrite",
            "memory_daily",
            "Noted in today's daily notes.",
            content="csvkit-lite reader: 1.8x faster after the split_row rewrite.",
        ),
        Pause(2),
        memory(
            "note: weatherbot forecast outage, root cause was str(list) in the request params",
            "memory_daily",
            "Added to today's notes.",
            content="weatherbot /forecast outage: str(list) in the request params (4e1a9c2).",
        ),
        Pause(9),
        memory(
            "today: started reading the Bub tape format docs 📼",
            "memory_daily",
            "Noted.",
            content="Bub tape docs 📼",
        ),
        memory(
            "also today: since 0.3 the archive .bak is re-serialized, not renamed",
            "memory_daily",
            "Appended to today's note.",
            content="Bub 0.3+: tape archives are re-serialized copies, not renames.",
        ),
        turn(
            "what do you remember about me?",
            act(Call("memory_show", {})),
            say("Python 3.12 with type hints and pytest. Recent notes: Bub tapes, weatherbot, csvkit."),
        ),
        memory(
            "remember too: 回答は短めに",
            "memory_save",
            "保存しました。",
            content="回答は短めに (keep answers short).",
        ),
        Pause(22),
        memory(
            "prune notes older than 30 days",
            "memory_prune",
            "Pruned the two oldest notes.",
            retention_days=30,
        ),
        turn(
            "close this planning phase",
            act(handoff("phase/planning-done", "Notes pruned to 30 days; preferences kept")),
            say("Handed off."),
        ),
        Pause(3),
        memory("forget everything, start fresh", "memory_clear", "Memory cleared."),
        memory(
            "remember: fresh start — concise answers and Python 3.12",
            "memory_save",
            "Saved.",
            content="Fresh start: prefers concise answers and Python 3.12.",
        ),
        memory(
            "note for today: 整理好了笔记，下周开始写 tapeview 的 memory 页面",
            "memory_daily",
            "记下了 ✍️",
            content="整理好了笔记，下周开始写 tapeview 的 memory 页面。",
        ),
    ]


def legacy_session(rng: random.Random, day: datetime) -> list[Item]:
    """The same repo under bub 0.2.2 in February: the old vocabulary and no time field."""
    probe = "python -c 'from csvkit_lite.reader import split_row; print(split_row(\"a,b,c\"))'"
    return [
        turn(
            "what files are here?",
            act(Call("bash", {"cmd": "ls"}, "AGENTS.md\nREADME.md\npyproject.toml\nsrc\ntests")),
            say("README.md, AGENTS.md, pyproject.toml, src/ and tests/."),
        ),
        turn(
            "read the README",
            act(read("README.md", README)),
            say("csvkit-lite, a tiny dependency-free CSV toolkit."),
        ),
        Command("tape.handoff name=phase-1 summary='explored workspace'"),
        Command("tape.info"),
        turn(
            "please hand off to phase-2",
            act(handoff("phase-2", "ready to implement")),
            say("Handed off to phase-2."),
        ),
        turn(
            "write a first version of split_row in src/csvkit_lite/reader.py",
            act(write(READER_PATH, READER), text="Writing a first, plain version."),
            act(Call("bash", {"cmd": probe}, "['a', 'b', 'c']")),
            say("`split_row` splits on the delimiter; quoting is not handled yet."),
        ),
        turn(
            "does it handle quotes?",
            say('No: `"a,b",c` becomes three fields. We need a small state machine.'),
        ),
    ]
