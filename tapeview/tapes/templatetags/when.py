"""Times as people read them: "3 h ago", with the exact UTC time on hover (`{% load when %}`)."""

from __future__ import annotations

from datetime import UTC, datetime

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()

# The largest unit that fits, as a count of whole units: "59 s", "3 h", "2 mo".
UNITS = [(365 * 86400, "y"), (30 * 86400, "mo"), (86400, "d"), (3600, "h"), (60, "min"), (1, "s")]


def relative(value: datetime, now: datetime) -> str:
    """How long before `now` `value` was, in its largest whole unit; a time ahead (clock skew) says "in"."""
    seconds = int((now - value).total_seconds())
    if abs(seconds) < 5:
        return "just now"
    size, unit = next((size, unit) for size, unit in UNITS if abs(seconds) >= size)
    count = abs(seconds) // size
    return f"{count} {unit} ago" if seconds > 0 else f"in {count} {unit}"


@register.filter
def ago(value: datetime | None, now: datetime | None = None) -> SafeString:
    """`<time>` saying how long ago, its title the UTC time; "time unknown" for a tape without times."""
    if value is None:
        return format_html('<span class="unknown" title="{}">unknown</span>', "this file records no times")
    now = now or datetime.now(UTC)
    exact = value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return format_html(
        '<time datetime="{}" title="{}">{}</time>', value.isoformat(), exact, relative(value, now)
    )
