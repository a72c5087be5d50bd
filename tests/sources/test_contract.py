"""Every source kind's reader provides the whole written-down contract, with the contract's signatures."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from tapeview.sources import KINDS, Reader, reader
from tapeview.sources.contract import Reader as ContractReader

FUNCTIONS = sorted(
    name for name, value in vars(Reader).items() if inspect.isfunction(value) and not name.startswith("_")
)


def test_the_contract_lists_what_callers_use() -> None:
    assert Reader is ContractReader
    assert set(FUNCTIONS) == {
        "context_messages",
        "detect",
        "discover",
        "pointer",
        "read_entries",
        "read_raw",
        "scan",
        "session_label",
        "tool_calls",
        "tool_results",
        "unfinished_tail",
    }
    assert typing.get_type_hints(Reader) == {"KIND": str}


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_reader_has_every_function_with_the_contracts_signature_and_types(kind: str, name: str) -> None:
    module = reader(kind)
    assert callable(getattr(module, name, None)), f"the {kind} reader has no {name}()"
    wanted = inspect.signature(getattr(Reader, name))
    found = inspect.signature(getattr(module, name))

    def shape(params: list[inspect.Parameter]) -> list[tuple]:
        return [(p.name, p.kind, p.default) for p in params]

    assert shape(list(found.parameters.values())) == shape(list(wanted.parameters.values())[1:])  # no self
    wanted_types = typing.get_type_hints(getattr(Reader, name))
    assert typing.get_type_hints(getattr(module, name)) == wanted_types


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_reader_names_its_kind_and_satisfies_the_protocol(kind: str) -> None:
    module = reader(kind)
    assert kind == module.KIND
    assert isinstance(module, Reader)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_reader_streams_the_raw_bytes_of_a_span(kind: str, tmp_path: Path) -> None:
    path = tmp_path / "file"
    path.write_bytes(b"0123456789")

    assert list(reader(kind).read_raw(path, 2, 5, chunk=2)) == [b"23", b"45", b"6"]
    assert b"".join(reader(kind).read_raw(path, 8, 100)) == b"89"


@pytest.mark.parametrize(("kind", "archived"), [("bub", 0), ("nanobot", 3), ("yachiyo", 0), ("araliya", 0)])
def test_only_nanobot_keeps_an_archive_pointer(kind: str, archived: int) -> None:
    assert reader(kind).pointer({"last_archived": 3, "last_consolidated": 3}, 10) == archived
    assert reader(kind).pointer(None, 10) == 0
