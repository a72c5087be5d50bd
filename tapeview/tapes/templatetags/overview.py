"""The session index's bars over time and figures (tapes.overview): `{% load overview %}`."""

from __future__ import annotations

from django import template
from django.db.models import QuerySet
from django.urls import reverse
from django.utils.safestring import SafeString

from tapeview.tapes import overview as figures
from tapeview.tapes.models import Tape
from tapeview.tapes.pictures import timebars

register = template.Library()


@register.simple_tag
def sessions_overview(tapes: QuerySet[Tape]) -> figures.Overview:
    """The figures of the sessions the index lists (its filters applied, every page)."""
    return figures.overview(tapes)


@register.simple_tag(takes_context=True)
def overview_bars(context: template.Context, data: figures.Overview, measure: str) -> SafeString:
    """The bars of one measure; each links to the index narrowed to its hour, day or month, the
    other filters kept."""
    query = context["request"].GET.copy()
    query.pop("page", None)
    index = reverse("tapes:tape_list")

    def link(bucket: figures.Bucket) -> str:
        query["range"] = "custom"  # the index's time range picker, as the bar's own span
        query["since"] = bucket.start.strftime(figures.LINK_FORMAT)
        query["until"] = bucket.end.strftime(figures.LINK_FORMAT)
        return f"{index}?{query.urlencode()}"

    return timebars.bars(data, measure, link)


@register.filter
def rate(value: float | None) -> str:
    """A share to one decimal place (0.8%): an error rate is often below one percent."""
    return "–" if value is None else f"{value:.1%}"


@register.filter
def span(data: figures.Overview) -> str:
    """The range the bars cover, in words: "20 Nov 2026 to 23 Nov 2026 (UTC)"."""
    if not data.buckets:
        return ""
    shown = timebars.WHEN[data.unit]
    return f"{data.buckets[0].start.strftime(shown)} to {data.buckets[-1].start.strftime(shown)} (UTC)"
