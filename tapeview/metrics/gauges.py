"""The index's figures, read from the database at every scrape: every web process answers the same.

Each query is over per-tape or per-host rows (no entry is counted), aggregated per source or host.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Case, Count, F, Min, Sum, When
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from tapeview.outbox.models import Courier, Request
from tapeview.tapes import health
from tapeview.tapes.discovery import BEAT_STALE
from tapeview.tapes.models import Indexer, SourceSize, Tape


class IndexCollector(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        yield from _index_lag()
        yield _search_lag()
        yield from _indexers()
        yield from _outbox()


def _index_lag() -> Iterator[GaugeMetricFamily]:
    behind_bytes = GaugeMetricFamily(
        "tapeview_index_behind_bytes",
        "Bytes of a source's tape files not yet indexed (its files' size as the indexer last saw them)",
        labels=["host", "source"],
    )
    behind_entries = GaugeMetricFamily(
        "tapeview_index_behind_entries",
        "Entries of a source not yet indexed, estimated: the bytes behind at the mean size of its "
        "indexed entries",
        labels=["host", "source"],
    )
    indexed_entries = GaugeMetricFamily(
        "tapeview_index_entries",
        "Entries (lines) of a source's tapes in the index",
        labels=["host", "source"],
    )
    # As the Sources page counts: a tape being indexed by its offset so far, any other by its size.
    read = Case(When(indexing_until__gte=timezone.now(), then=F("indexed_offset")), default=F("size"))
    tapes = {
        (row["host"], row["source"]): (row["read"] or 0, row["lines"] or 0)
        for row in Tape.objects.values("host", "source")
        .order_by()
        .annotate(read=Sum(read), lines=Sum(F("next_pos") - 1))
    }
    seen = {(row.host, row.source): row.total_bytes for row in SourceSize.objects.all()}
    for key in sorted({*tapes, *seen}):
        done, lines = tapes.get(key, (0, 0))
        behind = max(0, seen.get(key, 0) - done)
        behind_bytes.add_metric(key, behind)
        indexed_entries.add_metric(key, lines)
        if lines:  # with nothing indexed yet there is no mean entry size to go by
            behind_entries.add_metric(key, round(behind * lines / done) if done else 0)
    yield behind_bytes
    yield behind_entries
    yield indexed_entries


def _search_lag() -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        "tapeview_search_behind_entries", "Indexed entries not yet searchable", labels=["source"]
    )
    for source, n in sorted(health.search_behind().items()):
        family.add_metric([source], n)
    return family


def _indexers() -> Iterator[GaugeMetricFamily]:
    age = GaugeMetricFamily(
        "tapeview_indexer_heartbeat_age_seconds",
        "Seconds since the host's watcher (`tapeview index --watch`, or serve's) last beat; "
        "absent once it stopped cleanly",
        labels=["host"],
    )
    up = GaugeMetricFamily(
        "tapeview_indexer_up",
        f"1 while the host's watcher beats (within {BEAT_STALE.seconds} s), else 0",
        labels=["host"],
    )
    now = timezone.now()
    for host, beat_at in Indexer.objects.order_by("host").values_list("host", "beat_at"):
        if beat_at is not None:
            age.add_metric([host], max(0.0, (now - beat_at).total_seconds()))
        up.add_metric([host], 1 if beat_at is not None and now - beat_at <= BEAT_STALE else 0)
    yield age
    yield up


def _outbox() -> Iterator[GaugeMetricFamily]:
    waiting = GaugeMetricFamily(
        "tapeview_outbox_requests",
        "Writes in the outbox not finished yet, by the host whose watcher carries them out",
        labels=["host", "state"],
    )
    oldest = GaugeMetricFamily(
        "tapeview_outbox_oldest_queued_age_seconds",
        "Seconds the oldest write still queued for the host has waited",
        labels=["host"],
    )
    now = timezone.now()
    rows = (
        Request.objects.filter(state__in=[Request.QUEUED, Request.RUNNING])
        .values("host", "state")
        .order_by()
        .annotate(n=Count("id"), first=Min("created_at"))
    )
    counts = {(r["host"], r["state"]): (r["n"], r["first"]) for r in rows}
    # Every host whose outbox loop has beaten is shown, an empty queue as 0 rather than absent.
    hosts = {h for h, _ in counts} | set(Courier.objects.values_list("host", flat=True))
    for host in sorted(hosts):
        for state in (Request.QUEUED, Request.RUNNING):
            waiting.add_metric([host, state], counts.get((host, state), (0, None))[0])
        first = counts.get((host, Request.QUEUED), (0, None))[1]
        if first is not None:
            oldest.add_metric([host], max(0.0, (now - first).total_seconds()))
    yield waiting
    yield oldest
