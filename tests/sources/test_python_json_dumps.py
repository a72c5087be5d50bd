"""python_json.dumps: JSON of whatever python_json.loads read, as compact as orjson writes it."""

from __future__ import annotations

import json

import orjson
import pytest

from tapeview.sources import python_json

WIDE = 2**70


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True, 'é"\\n'], "b": {}},
        {"n": WIDE, "list": [WIDE, -WIDE], "s": "日本語"},
        [[], [{}], ""],
        WIDE,
        "plain",
    ],
)
def test_it_writes_what_json_writes_compactly(value: object) -> None:
    assert python_json.dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@pytest.mark.parametrize("levels", [300, 1_020])  # orjson reads 1,024, writes 254; json.dumps ~1,000
def test_it_writes_nesting_deeper_than_orjson_and_json_dumps_do(levels: int) -> None:
    text = b'{"a": [' * (levels // 2) + b"1" + b"]}" * (levels // 2)
    value = orjson.loads(text)
    with pytest.raises(TypeError):
        orjson.dumps(value)
    written = python_json.dumps(value)
    assert written == text.replace(b" ", b"")
