"""Diffs as a user reads them: whole lines added and removed, changed words marked."""

from __future__ import annotations

from memory_admin.diff import changed, line_diff, unified


def test_an_edited_line_marks_only_the_changed_words() -> None:
    lines = line_diff("I prefer Python 3.11.\n", "I prefer Python 3.12.\n")
    old, new = lines
    assert (old.op, new.op) == ("del", "add")
    assert [s.text for s in new.spans if s.changed] == ["2"]
    assert new.text == "I prefer Python 3.12."


def test_added_and_removed_lines_are_whole() -> None:
    lines = line_diff("a\nb\nc\n", "a\nc\nd\n")
    assert [(x.op, x.text) for x in lines] == [("same", "a"), ("del", "b"), ("same", "c"), ("add", "d")]


def test_far_unchanged_lines_are_skipped_with_a_marker() -> None:
    old = "\n".join(f"line {i}" for i in range(20))
    new = old.replace("line 10", "line ten")
    lines = line_diff(old, new, context=1)
    assert lines[0] is None and lines[-1] is None
    assert [x.text for x in lines if x is not None] == ["line 9", "line 10", "line ten", "line 11"]


def test_cjk_and_emoji_diff_by_character() -> None:
    (old, new) = line_diff("最喜欢的颜色是蓝色 🙂", "最喜欢的颜色是绿色 🙂")
    assert [s.text for s in new.spans if s.changed] == ["绿"]


def test_identical_texts_have_no_change_and_an_empty_unified_diff() -> None:
    assert not changed(line_diff("same\n", "same\n"))
    assert unified("same\n", "same\n") == ""
    assert "+new" in unified("old\n", "new\n")
