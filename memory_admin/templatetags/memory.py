"""Rendering for the memory pages: Markdown as the agent's user would read it, times as the site shows."""

from __future__ import annotations

from django import template
from django.core.cache import cache
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt

from tapeview.tapes.pictures.tallies import state_key
from tapeview.tapes.templatetags.tapes import when

from ..kinds import kind_of
from ..kinds.base import parse_time

register = template.Library()
KEPT_SECONDS = 600  # as the tapes' pictures: what is kept holds until the files change
# Raw HTML in memory files is shown as text, never rendered: the files are not ours to trust.
_md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table").enable("strikethrough")


@register.filter
def markdown(text: str) -> str:
    return mark_safe(_md.render(text or ""))


@register.filter
def stamp(value: object) -> str:
    """A time an agent stored as text, shown as the site shows times; text that is no time, as it is."""
    moment = parse_time(value)
    if moment is not None:
        return when(moment)
    return when(None) if value in (None, "") else str(value)


@register.simple_tag
def listed(store) -> dict:
    """A store's versions, last change and size as its own page shows them: the revisions Tapeview kept
    (`store.versions`, counted by the list's query) and the file's time, or for a store that lists
    its own versions (a Bub zone: the file's time moves with every entry the agent appends) those,
    and its memory's size, not its tape's."""
    if kind_of(store).lists_revisions or store.tape is None:
        return {"versions": store.versions, "changed_at": store.changed_at, "size": store.size}
    # Kept until the zone's tape or a file beside it changes: a list of many zones reads none again.
    holders = [store.tape, *store.tape.attachments.filter(role="sidecar")]
    key = state_key("zone-versions", store.tape, tuple(state_key("holder", h) for h in holders))
    found = cache.get(key)
    if found is None:
        own = kind_of(store).versions(store)  # newest first
        found = {"versions": len(own), "changed_at": own[0].date if own and own[0].date else None}
        found["size"] = kind_of(store).size(store)
        cache.set(key, found, KEPT_SECONDS)
    changed_at = found["changed_at"] or store.changed_at
    return {"versions": found["versions"], "changed_at": changed_at, "size": found.get("size", store.size)}
