"""Prices of models in USD per million tokens: the table shipped in `prices.json`, merged under the
file TAPEVIEW_PRICES names, and a model named as an agent writes it found in it (or not: no guess)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from django.conf import settings

SHIPPED = Path(__file__).with_name("prices.json")
MILLION = 1_000_000
FIELDS = ("input", "output", "cached_input")
log = logging.getLogger("tapeview.prices")

# What agents put around a model's own name: a provider ("anthropic:", "openrouter/openai/"), a cloud's
# vendor prefix ("us.anthropic."), a snapshot's date ("-20241022", "-2024-08-06", "@20241022", "-0905"
# is Moonshot's and is in the table itself), Bedrock's version ("-v2:0"), "-latest".
_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*:(?=[a-z])")
_VENDOR = re.compile(r"^(?:[a-z]{2}\.)?(?:anthropic|openai|google|meta|amazon|deepseek|qwen|moonshot)\.")
_SUFFIX = re.compile(r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2})|-v\d+(?::\d+)?|-latest)$")
_CLAUDE_DOTS = re.compile(r"(?<=\d)\.(?=\d)")  # OpenRouter's "claude-3.5-sonnet", "claude-sonnet-4.5"


class PricesInvalid(ValueError):
    """A price file that is not a table of prices: what is wrong, and where."""


@dataclass(frozen=True, slots=True)
class Price:
    model: str  # the table's name for it
    provider: str
    input: float  # USD per million tokens
    output: float
    cached_input: float | None  # None: no discount, cached tokens cost the input price

    def cost(self, prompt: int, completion: int, cached: int) -> float:
        """USD for a call's tokens: `prompt` includes the `cached` ones, as OpenAI-style usage counts them."""
        cached = min(max(cached, 0), max(prompt, 0))
        cached_rate = self.input if self.cached_input is None else self.cached_input
        fresh = max(prompt, 0) - cached
        return (fresh * self.input + cached * cached_rate + max(completion, 0) * self.output) / MILLION


@dataclass(frozen=True, slots=True)
class Table:
    taken: str  # the date the shipped prices were taken
    prices: dict[str, Price]
    override: str  # the file merged over the shipped table ("" for none)
    overridden: frozenset[str]  # the models the override set
    digest: str  # what tells one table from another: stored costs priced with another are redone

    def find(self, model: str) -> Price | None:
        """The price of a model as an agent names it, or None where the table does not know it."""
        for name in candidates(model):
            if name in self.prices:
                return self.prices[name]
        return None


def candidates(model: str) -> list[str]:
    """The names a model may go by in the table, most specific first: as written, without its
    provider, then without its date or version."""
    name = model.strip().lower()
    out: list[str] = []
    if not name:
        return out
    out.append(name)
    name = name.rsplit("/", 1)[-1]
    name = _PROVIDER.sub("", name)
    while _VENDOR.match(name):
        name = _VENDOR.sub("", name, count=1)
    if name.startswith("claude"):
        name = _CLAUDE_DOTS.sub("-", name)
    out.append(name)
    while True:
        shorter = _SUFFIX.sub("", name)
        if shorter == name or not shorter:
            break
        name = shorter
        out.append(name)
    return list(dict.fromkeys(out))


def parse(text: bytes, name: str) -> dict:
    """A price file's document: JSON, or TOML for a name ending in .toml."""
    try:
        doc = tomllib.loads(text.decode()) if name.endswith(".toml") else json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise PricesInvalid(f"{name}: not {'TOML' if name.endswith('.toml') else 'JSON'} ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("models"), dict):
        raise PricesInvalid(f'{name}: no "models" table (model name -> input, output, cached_input)')
    return doc


def _number(value: object, where: str, *, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if type(value) not in (int, float) or not math.isfinite(value) or value < 0:
        raise PricesInvalid(f"{where}: {value!r} is not a price (USD per million tokens, 0 or more)")
    return float(value)


def merged(shipped: dict, override: dict | None, override_name: str = "") -> tuple[dict[str, Price], set]:
    """The shipped models with the override's over them, field by field: an override may change one
    price of a known model, or add a model with its input and output prices."""
    rows: dict[str, dict] = {name.lower(): dict(row) for name, row in shipped["models"].items()}
    overridden = set()
    for name, row in ((override or {}).get("models") or {}).items():
        where = f"{override_name}: {name}"
        if not isinstance(row, dict):
            raise PricesInvalid(f"{where}: not a table of prices")
        key = name.strip().lower()
        rows[key] = {**rows.get(key, {}), **row}
        overridden.add(key)
    prices = {}
    for key, row in rows.items():
        where = f"{override_name or SHIPPED.name}: {key}"
        if "input" not in row or "output" not in row:
            raise PricesInvalid(f"{where}: needs both input and output prices")
        prices[key] = Price(
            key,
            str(row.get("provider") or ""),
            _number(row["input"], f"{where}.input"),
            _number(row["output"], f"{where}.output"),
            _number(row.get("cached_input"), f"{where}.cached_input", optional=True),
        )
    return prices, overridden


def _digest(prices: dict[str, Price]) -> str:
    canon = json.dumps([[p.model, p.input, p.output, p.cached_input] for p in prices.values()])
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


@lru_cache(maxsize=8)
def _load(path: str, stamp: tuple[int, int]) -> Table:
    shipped = parse(SHIPPED.read_bytes(), SHIPPED.name)
    override = None
    if path:
        try:
            text = Path(path).read_bytes()
        except OSError as exc:
            raise PricesInvalid(f"{path}: {exc.strerror or exc}") from None
        override = parse(text, path)
    prices, overridden = merged(shipped, override, path)
    prices = dict(sorted(prices.items()))
    return Table(str(shipped.get("taken") or ""), prices, path, frozenset(overridden), _digest(prices))


def _stamp(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError:
        return (-1, -1)
    return st.st_mtime_ns, st.st_size


def table() -> Table:
    """The prices now: the shipped table with TAPEVIEW_PRICES over it, read again when that file
    changes. PricesInvalid says what is wrong with the file."""
    path = settings.TAPEVIEW_PRICES
    return _load(path, _stamp(path) if path else (0, 0))


_last_good: list[Table] = []


def current() -> Table:
    """`table()`, or where the override file is broken now, the last good table (else the shipped
    one): indexing never stops for it; the prices page says what is wrong."""
    try:
        found = table()
    except PricesInvalid as exc:
        log.warning("prices: %s; pricing with the last good table", exc)
        return _last_good[0] if _last_good else _load("", (0, 0))
    _last_good[:] = [found]
    return found
