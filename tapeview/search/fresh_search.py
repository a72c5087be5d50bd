"""Search over PostgreSQL's fresh docs (search.fresh): the blocks whose words hold every word of the
query (a phrase's words anywhere), newest first; in them the docs whose words do (`strpos` on their
spaced words); and each such doc's tsvector made as search_doc's would be, matched and ranked by the
same ts_rank. backends.PostgreSQL reads both tables in one snapshot (`snapshot`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from .docs import Found, Where, fetch
from .fresh import FIELDS, TSV
from .text import pg_query, terms


@contextmanager
def snapshot() -> Iterator[None]:
    """The statements within read one snapshot of both tables (REPEATABLE READ), so a block that
    `refine` moves meanwhile is seen in one of them, once. Within a caller's transaction they keep
    its isolation (under READ COMMITTED, no such promise): no page or API call searches in one."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def either(sql: str, ids: list[int], params: Callable[[list[int]], list]) -> dict[int, str]:
    """`sql` (a statement of (id, value) rows, `{}` for its table) of these docs, wherever they are:
    search_doc first, then search_fresh for those it lacks, then search_doc again for those a move
    took there meanwhile. Where no doc is fresh, search_fresh is never read (after a move its index
    is full of deleted rows until the table is vacuumed)."""
    found = dict(fetch(sql.format("search_doc"), params(ids)))
    for table in ("search_fresh", "search_doc"):
        if not (missing := [doc_id for doc_id in ids if doc_id not in found]):
            break
        found.update(fetch(sql.format(table), params(missing)))
    return found


def coarse(q: str, where: Where) -> str:
    """The tsquery a block's words must match: every word of the query, a phrase's words anywhere."""
    parts = []
    for term in terms(q):
        quoted = [f"'{w}'" for w in term.words]
        if term.prefix:
            quoted[-1] += ":*"
        parts += quoted
    parts += ["(" + " | ".join(alternatives) + ")" for alternatives in where.tags]
    return " & ".join(parts)


def found(q: str, query: str, where: Where, wanted: int) -> list[Found]:
    """The newest `wanted` fresh docs that match `query` (the tsquery of `q` and `where`'s tags) within
    `where`, scored as search_doc's are."""
    hits: list[Found] = []
    for low, high in _blocks(q, where):
        hits += _matched(q, query, where.narrowed(low, high), wanted - len(hits))
        if len(hits) >= wanted:
            break
    return hits[:wanted]


def counted(q: str, query: str, where: Where, limit: int) -> int:
    """How many fresh docs match, counted up to `limit`: as `found` finds them, unranked, the blocks
    a few hundred ranges to a statement."""
    total = 0
    blocks = list(_blocks(q, where))
    likely, words = _likely(terms(q), where)
    tapes, tape_ids = where.tapes_sql("f.id", placeholders=False, redundant=False)
    for group in _batched(blocks, 200):
        ranges = " OR ".join(f"f.id BETWEEN {int(low)} AND {int(high)}" for low, high in group)
        within, bounds = where.ids_sql("f.id")
        sql = (
            f"SELECT count(*) FROM (SELECT 1 FROM search_fresh f WHERE ({ranges}) AND {within} AND {tapes} "
            f"AND {where.sql} AND {likely} AND {TSV} @@ to_tsquery('simple', %s) LIMIT %s) AS matched"
        )
        total += fetch(sql, [*bounds, *tape_ids, *where.params, *words, query, limit - total])[0][0]
        if total >= limit:
            break
    return total


def _batched(items: list, n: int) -> Iterator[list]:
    """`items` n at a time (itertools.batched from Python 3.12 on)."""
    for start in range(0, len(items), n):
        yield items[start : start + n]


def _blocks(q: str, where: Where) -> Iterator[tuple[int, int]]:
    """The id ranges of the blocks whose words hold the query's, newest first, overlaps merged."""
    listed = fetch(
        "SELECT low, high FROM search_chunk WHERE words @@ to_tsquery('simple', %s) "
        "AND high >= %s AND low <= %s ORDER BY high DESC",
        [coarse(q, where), where.first, where.last],
    )
    run: list[int] | None = None
    for low, high in listed:
        if run is not None and high >= run[0]:
            run[0] = min(run[0], low)
            continue
        if run is not None:
            yield run[0], run[1]
        run = [low, high]
    if run is not None:
        yield run[0], run[1]


def _matched(q: str, query: str, where: Where, wanted: int) -> list[Found]:
    """The newest `wanted` fresh docs of one range that match, scored as search_doc's are (the query
    alone, as backends._scored): the docs whose words hold the query's (a cheap test), then their
    tsvector made and matched."""
    within, bounds = where.ids_sql("f.id")
    tapes, tape_ids = where.tapes_sql("f.id", placeholders=False, redundant=False)
    likely, words = _likely(terms(q), where)
    sql = (
        f"SELECT f.id, {FIELDS}, ts_rank(m.v, to_tsquery('simple', %s), 1) FROM search_fresh f, "
        f"LATERAL (SELECT {TSV} AS v) AS m WHERE {within} AND {tapes} AND {where.sql} AND {likely} "
        "AND m.v @@ to_tsquery('simple', %s) ORDER BY f.id DESC LIMIT %s"
    )
    params = [pg_query(q), *bounds, *tape_ids, *where.params, *words, query, wanted]
    return [Found(*row) for row in fetch(sql, params)]


def _likely(needed: list, where: Where) -> tuple[str, list[str]]:
    """A condition every matching doc meets, cheap for the server to test: each tag group's, and each
    word of the query among the doc's words (a prefix: as the start of one)."""
    parts, params = [], []
    for alternatives in where.tags:
        parts.append("(" + " OR ".join(["strpos(f.tags, %s) > 0"] * len(alternatives)) + ")")
        params += alternatives
    for term in needed:
        for n, word in enumerate(term.words, 1):
            prefix = term.prefix and n == len(term.words)
            parts.append("strpos(f.words, %s) > 0")
            params.append(f" {word}" if prefix else f" {word} ")
    return " AND ".join(parts) or "true", params
