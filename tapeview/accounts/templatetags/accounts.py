"""Formatting for the audit log: where a row's subject is shown."""

from __future__ import annotations

from django import template
from django.urls import NoReverseMatch, reverse

register = template.Library()
# The page of each kind of subject, by URL name: the audit log names what it points at, not its code.
PAGES = {"store": "memory_admin:store_detail", "tape": "tapes:tape_detail", "queue": "reviews:queue_detail"}


@register.filter
def subject_url(subject: str) -> str:
    """The page of an audit row's subject ("store:<key>", "tape:<key>"), or "" when it has none."""
    kind, _, key = (subject or "").partition(":")
    if kind not in PAGES or not key:
        return ""
    try:
        return reverse(PAGES[kind], args=[key])
    except NoReverseMatch:
        return ""
