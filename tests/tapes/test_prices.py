"""The price table: a model named as agents write it found in it, or not at all; an override file
merged over the shipped table (no database)."""

from __future__ import annotations

import json

import pytest

from tapeview.tapes import prices

SHIPPED = json.loads(prices.SHIPPED.read_text())


@pytest.fixture
def table(settings) -> prices.Table:
    settings.TAPEVIEW_PRICES = ""
    return prices.table()


@pytest.mark.parametrize(
    ("written", "model"),
    [
        ("anthropic:claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("claude-3-5-sonnet-20241022", "claude-3-5-sonnet"),
        ("openrouter/openai/gpt-4o", "gpt-4o"),
        ("openai:gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),  # a snapshot with its own price keeps it
        ("openrouter:anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("anthropic/claude-3.5-haiku", "claude-3-5-haiku"),
        ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "claude-3-7-sonnet"),
        ("vertex_ai/claude-opus-4-1@20250805", "claude-opus-4-1"),
        ("GPT-4.1-Mini", "gpt-4.1-mini"),
        ("gemini/gemini-2.5-pro", "gemini-2.5-pro"),
        ("deepseek/deepseek-chat", "deepseek-chat"),
        ("moonshot:kimi-k2-0905-preview", "kimi-k2-0905-preview"),
        ("qwen-max-2025-01-25", "qwen-max"),
        ("o3-mini-2025-01-31", "o3-mini"),
    ],
)
def test_a_model_is_found_as_agents_name_it(table: prices.Table, written: str, model: str) -> None:
    found = table.find(written)
    assert found is not None and found.model == model
    assert found.input == SHIPPED["models"][model]["input"]


@pytest.mark.parametrize(
    "written",
    [
        "",
        "my-llm",
        "gpt-4o-mini-tts",
        "qwen/qwen3-coder-next",
        "llama-3.3-70b:free",
        "claude",
        "gpt-4o-mini-x",
    ],
)
def test_a_model_the_table_does_not_know_has_no_price(table: prices.Table, written: str) -> None:
    assert table.find(written) is None


def test_a_call_is_priced_with_cached_tokens_at_their_own_rate(table: prices.Table) -> None:
    price = table.find("gpt-4o")
    # 1,000 prompt tokens of which 400 cached, 200 completion: 600 x 2.50 + 400 x 1.25 + 200 x 10.
    assert price.cost(1000, 200, 400) == pytest.approx((600 * 2.5 + 400 * 1.25 + 200 * 10) / 1e6)


def test_cached_tokens_without_a_discount_cost_the_input_price(table: prices.Table) -> None:
    price = table.find("gpt-4-turbo")
    assert price.cached_input is None
    assert price.cost(1000, 0, 400) == pytest.approx(1000 * 10 / 1e6)


def test_the_shipped_table_says_when_it_was_taken(table: prices.Table) -> None:
    assert table.taken == SHIPPED["taken"] and len(table.taken) == 10
    assert table.override == "" and not table.overridden


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_an_override_file_changes_a_price_and_adds_a_model(settings, tmp_path, suffix: str) -> None:
    path = tmp_path / f"prices{suffix}"
    if suffix == ".json":
        path.write_text(
            json.dumps({"models": {"gpt-4o": {"input": 2.0}, "my-llm": {"input": 1, "output": 2}}})
        )
    else:
        path.write_text('[models.gpt-4o]\ninput = 2.0\n\n[models."my-llm"]\ninput = 1\noutput = 2\n')
    settings.TAPEVIEW_PRICES = str(path)
    table = prices.table()
    assert table.find("openai:gpt-4o").input == 2.0
    assert (
        table.find("openai:gpt-4o").output == SHIPPED["models"]["gpt-4o"]["output"]
    )  # merged field by field
    assert table.find("my-llm").output == 2.0
    assert table.overridden == {"gpt-4o", "my-llm"}
    settings.TAPEVIEW_PRICES = ""
    assert prices.table().digest != table.digest


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "not JSON"),
        ('{"prices": {}}', 'no "models" table'),
        ('{"models": {"my-llm": {"input": 1}}}', "needs both input and output"),
        ('{"models": {"gpt-4o": {"input": -1}}}', "is not a price"),
        ('{"models": {"gpt-4o": {"input": "cheap"}}}', "is not a price"),
        ('{"models": {"gpt-4o": 3}}', "not a table of prices"),
    ],
)
def test_a_broken_override_says_what_is_wrong(settings, tmp_path, content: str, says: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    settings.TAPEVIEW_PRICES = str(path)
    with pytest.raises(prices.PricesInvalid, match=says):
        prices.table()
    assert prices.current().find("gpt-4o") is not None  # indexing goes on with a good table
