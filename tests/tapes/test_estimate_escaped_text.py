"""The context budget of entries it never reads, when their text is written as JSON escapes
(`\\u4e2d`, six bytes a character: json.dumps' default, which nanobot used before v0.1.4.post1 and
any writer keeping ensure_ascii=True uses): priced as the characters the model is sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tapeview.tapes import budget, discovery
from tapeview.tapes.models import Tape

pytestmark = [pytest.mark.django_db, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

MODEL = "openai:gpt-4.1"
SENTENCES = [
    "我们先把导出的行程表读一遍，看看里面有多少条记录。",
    "第{n}行的日期格式不对，需要改成年月日的写法。",
    "里斯本到波尔图的距离是三百一十三公里，大约三个小时。",
    "请把重复的记录删掉，然后按日期排序，再保存成新文件。",
    "好的，我已经检查了第{n}批数据，没有发现新的问题。",
    "测试全部通过了，接下来我们可以整理一下代码的结构。",
]
TEXTS = {
    "Chinese": SENTENCES,
    "Chinese and emoji": [s + "😀🚆" for s in SENTENCES],  # a surrogate pair each: one character
}


def chat(text: list[str], turns: int) -> list[dict]:
    """An anchor, then a turn of `turns` questions and answers in `text`, then the step's end."""
    payloads = [("anchor", {"name": "session/start", "state": {"owner": "human"}})]
    payloads.append(("event", {"name": "loop.start", "data": {"model": MODEL}}))
    for i in range(turns):
        for role in ("user", "assistant"):
            said = "".join(text[(i + j) % len(text)].format(n=i + j) for j in range(8))
            payloads.append(("message", {"role": role, "content": said}))
    payloads.append(("event", {"name": "loop.step", "data": {"status": "ok"}}))
    date = "2026-11-22T01:00:00+00:00"
    return [
        {"id": n, "kind": k, "payload": p, "meta": {}, "date": date} for n, (k, p) in enumerate(payloads, 1)
    ]


def tokens(reader, folder: Path, name: str, lines: list[dict], *, ensure_ascii: bool) -> int:
    text = "".join(json.dumps(line, ensure_ascii=ensure_ascii) + "\n" for line in lines)
    (folder / f"{name}.jsonl").write_text(text, encoding="utf-8")
    discovery.sync()
    body = reader.get(f"/api/tapes/{Tape.objects.get(name=name).key}/budget").json()
    assert body["source"] == "estimated"
    return body["tokens_since_anchor"]


# The newest entries read, the rest never read (priced by their lines' size): past CAP_ROWS, summed
# from the index; past CAP_BYTES, one by one; CAP_ROWS 1, only the step's end (no tokens to take a rate from).
@pytest.mark.parametrize(("cap", "value"), [("CAP_ROWS", 4), ("CAP_BYTES", 20_000), ("CAP_ROWS", 1)])
@pytest.mark.parametrize("text", TEXTS)
def test_escaped_text_never_read_is_priced_as_the_characters_it_stands_for(
    reader, served, monkeypatch, cap, value, text
) -> None:
    lines = chat(TEXTS[text], turns=60)
    read_whole = tokens(reader, served["samples"], "escaped_whole", lines, ensure_ascii=True)
    monkeypatch.setattr(budget, cap, value)
    escaped = tokens(reader, served["samples"], "escaped", lines, ensure_ascii=True)
    raw = tokens(reader, served["samples"], "raw", lines, ensure_ascii=False)
    # As the same text written raw (three bytes a character), and under the count once read (entries
    # never read are a lower bound): priced at six bytes a character, it was 1.5 to 1.9 times the count.
    assert raw / 1.3 <= escaped <= raw * 1.3, (escaped, raw)
    assert escaped <= read_whole, (escaped, read_whole)
