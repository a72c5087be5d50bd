"""Near-duplicate hits folded under the entry they repeat (no database)."""

from __future__ import annotations

from dataclasses import dataclass

from tapeview.search.copies import fold
from tapeview.search.text import terms


@dataclass
class Row:
    id: int
    tape_id: int
    kind: str
    name: str
    text: str

    @property
    def body(self) -> str:
        return f"{self.kind} {self.name}\n{self.text}"


def groups(q: str, *rows: Row, without: tuple[int, ...] = ()) -> list[list[int]]:
    """The ids of the rows (given best first) in their groups, each lead first."""
    bodies = {r.id: r.body for r in rows if r.id not in without}
    return [[rows[i].id for i in group] for group in fold(rows, bodies, terms(q))]


USER = "记住：我最喜欢的颜色是蓝色，我每天早上七点起床。"
ANSWER = "好的，我记住了：\n\n- 你最喜欢的颜色是**蓝色**\n- 你每天早上 7:00 起床"


def test_a_stream_of_the_answer_folds_under_the_message():
    delta = Row(1, 1, "event", "llm.stream.delta", ANSWER)
    message = Row(2, 1, "message", "assistant", ANSWER + "\nDONE\nrpc")
    assert groups("蓝色", delta, message) == [[2, 1]]


def test_a_tool_calls_streamed_arguments_fold_under_the_call():
    args = '{"content":"用户最喜欢的颜色是蓝色","keywords":["颜色","蓝色"]}'
    delta = Row(1, 1, "event", "tool_call.delta", f"memory_write\n{args}")
    stable = Row(
        2, 1, "event", "tool_call.stable", f"memory_write\n{args}\n用户最喜欢的颜色是蓝色\n颜色\n蓝色"
    )
    call = Row(
        3, 1, "tool_call", "memory_write", "tool.call\nmemory_write\n用户最喜欢的颜色是蓝色\n颜色\n蓝色"
    )
    assert groups("蓝色", delta, stable, call) == [[3, 1, 2]]


def test_a_prompt_copy_folds_under_the_entry_whose_longest_line_it_holds():
    call = Row(1, 1, "tool_call", "memory_write", "password hint is blue dog")
    user = Row(2, 1, "message", "user", 'Remember that my password hint is "blue dog".')
    prompt = Row(3, 1, "event", "llm.prompt.assembled", "You are yachiyo.\n" + user.text)
    assert groups("blue", call, user, prompt) == [[1], [2, 3]]


def test_a_handoff_event_folds_under_its_anchor_never_the_other_way():
    state = "Error code: 400 context_length_exceeded for this model"
    event = Row(1, 1, "event", "handoff", f"auto_handoff\ncontext_length_exceeded\n{state}")
    anchor = Row(2, 1, "anchor", "auto_handoff", f"context_length_exceeded\n{state}")
    assert groups("context_length_exceeded", event, anchor) == [[2, 1]]


def test_an_event_never_folds_under_another_event_by_what_it_quotes():
    """Events fold under the tiers before theirs (messages, then anchors), never under an event."""
    plan = Row(1, 1, "event", "plan", "rewrite the csv parser with quoted fields")
    step = Row(2, 1, "event", "step", "rewrite the csv parser with quoted fields\nthen run the parser tests")
    assert groups("parser", plan, step) == [[1], [2]]


def test_entries_whose_matching_lines_are_the_same_fold_under_the_best():
    first = Row(1, 1, "message", "user", "continue with the parser\nmore")
    again = Row(2, 1, "message", "user", "continue with the parser\nother")
    other = Row(3, 1, "message", "user", "continue with the parser please")
    assert groups("parser", first, again, other) == [[1, 2], [3]]


def test_a_copy_of_only_the_matched_words_stays_a_hit_of_its_own():
    message = Row(1, 1, "message", "user", "蓝色")
    event = Row(2, 1, "event", "plan", "蓝色的天空\n蓝色")
    assert groups("蓝色", message, event) == [[1], [2]]


def test_original_entries_never_fold_under_one_another_by_what_they_quote():
    call = Row(1, 1, "tool_call", "memory_write", "用户最喜欢的颜色是蓝色")
    result = Row(2, 1, "tool_result", "memory_write", '{"ok":true,"content":"用户最喜欢的颜色是蓝色"}')
    assert groups("蓝色", call, result) == [[1], [2]]


def test_entries_of_other_tapes_or_without_text_never_fold():
    message = Row(1, 1, "message", "assistant", ANSWER)
    elsewhere = Row(2, 2, "event", "llm.stream.delta", ANSWER)
    unread = Row(3, 1, "event", "llm.stream.delta", ANSWER)
    assert groups("蓝色", message, elsewhere, unread, without=(3,)) == [[1], [2], [3]]


def test_groups_keep_the_place_of_their_lead():
    delta = Row(1, 1, "event", "llm.stream.delta", ANSWER)
    user = Row(2, 1, "message", "user", USER)
    answer = Row(3, 1, "message", "assistant", ANSWER)
    assert groups("蓝色", delta, user, answer) == [[2], [3, 1]]
