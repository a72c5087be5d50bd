"""Forms that validate the query strings of the tape pages."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from django import forms
from django.db.models import F
from django.db.models.functions import Lower

from .listing import KINDS, NARROWINGS, token_measure
from .lookup import MAX_POS
from .timeline import ONLY

COLUMNS = [
    ("label", "Session"),
    ("source", "Source"),
    ("host", "Host"),  # shown only when the index holds more than one host
    ("entries", "Entries"),
    ("anchors", "Anchors"),
    ("last_anchor", "Last anchor"),
    ("since", "Since anchor"),
    ("first", "First activity"),
    ("last", "Last activity"),
    ("size", "Size"),
    ("tokens", "Tokens"),
    ("cost", "Cost"),
    ("context", "Context"),
    ("errors", "Errors"),
]
# The columns a person may hide (the session's own column always shows), in the table's order.
PICKABLE = [
    *((key, title) for key, title in COLUMNS[1:10]),
    ("activity", "Activity"),
    *((key, title) for key, title in COLUMNS[10:]),
]
# The time range picker's choices: a span back from now, or the custom since and until.
RANGES = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
SORTS = {
    "label": "label",
    "source": "source",
    "host": "host",
    "entries": "entries",
    "anchors": "anchors",
    "last_anchor": "last_anchor",
    "since": "entries_since_anchor",
    "first": "first_at",
    "last": "last_at",
    "size": "size",
    "tokens": "tokens",
    "cost": "cost",
    "context": "context_tokens",
    "errors": "errors",
}
# The phase table's columns (tapes.phases.SORTS): the first click on a figure sorts the largest first.
PHASE_COLUMNS = [
    ("index", "Phase"),
    ("tokens", "Tokens"),
    ("duration", "Time"),
    ("calls", "Calls"),
    ("errors", "Errors"),
]


class TapeListForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    source = forms.CharField(required=False, max_length=100)
    host = forms.CharField(required=False, max_length=255)
    kind = forms.ChoiceField(required=False, choices=[("", "all kinds"), *((k, k) for k in KINDS)])
    # `?errors=1`: only the sessions with an error. Read as text so that `?errors=0` means no (a
    # checkbox widget reads any text as yes); the template draws its checkbox itself.
    errors = forms.BooleanField(required=False, widget=forms.TextInput)
    # The filter language (tapes.expression); parsed by the view, which says where one goes wrong.
    filter = forms.CharField(required=False, strip=True)
    range = forms.ChoiceField(
        required=False, choices=[("", "any time"), *((r, r) for r in [*RANGES, "custom"])]
    )
    since = forms.DateTimeField(required=False)
    until = forms.DateTimeField(required=False)
    cols = forms.MultipleChoiceField(required=False, choices=[("label", "Session"), *PICKABLE])
    sort = forms.CharField(required=False, max_length=20)
    page = forms.IntegerField(required=False, min_value=1)
    # The keyset pages' cursors (tapes.seek): the rows after, or before, the row a cursor names.
    after = forms.CharField(required=False, max_length=1000)
    before = forms.CharField(required=False, max_length=1000)

    # Text sorts A to Z on the first click; figures and times the largest and newest first.
    TEXT_COLUMNS = ("label", "source", "host", "last_anchor")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for name, narrowing in NARROWINGS.items():  # filters other apps add (reviews)
            self.fields[name] = copy.deepcopy(narrowing.field)

    def narrowings(self) -> dict[str, object]:
        return {name: self.cleaned_data.get(name) for name in NARROWINGS if name in self.cleaned_data}

    def narrowing_fields(self) -> list:
        return [self[name] for name in NARROWINGS]

    def span(self, now: datetime) -> tuple[datetime | None, datetime | None]:
        """The time range picked: since and until (either may be None)."""
        data = self.cleaned_data
        chosen = data.get("range") or ""
        if chosen in RANGES:
            return now - RANGES[chosen], None
        return data.get("since"), data.get("until")

    def saved_local(self, name: str) -> str:
        """The custom range's since or until as its datetime-local input holds it ("" for none)."""
        return _local(self.cleaned_data.get(name)) or ""

    def shown(self) -> list[str]:
        """The keys of the columns shown: those picked (`cols`), else every one."""
        picked = self.cleaned_data.get("cols") or []
        keys = [key for key, _ in PICKABLE]
        return ["label", *(k for k in keys if k in picked)] if picked else ["label", *keys]

    def current_sort(self) -> str:
        sort = self.cleaned_data.get("sort") or "-last"
        return sort if sort.lstrip("-") in SORTS else "-last"

    def ordering(self) -> list:
        sort = self.current_sort()
        key = sort.lstrip("-")
        # Text A to Z as people read it ("cli:local" beside "CI run"), not capitals first.
        field = Lower(SORTS[key]) if key in self.TEXT_COLUMNS else F(SORTS[key])
        # Tapes without times sort last either way.
        expr = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True)
        # Either way the totals come first, then the figures that are no total (nanobot's last turn).
        measure = [token_measure()] if key == "tokens" else []
        return [*measure, expr, Lower("label"), "key"]

    def columns(self, *, hosts: bool = False) -> list[tuple[str, str, str, str]]:
        """Each column's key, the sort its link asks for (a second click reverses), its title, its state.

        The host column only with `hosts`: an index of one host looks as it did before fleets.
        """
        sort = self.current_sort()
        shown = self.shown()
        out = []
        for key, title in COLUMNS:
            if (key == "host" and not hosts) or key not in shown:
                continue
            first = key if key in self.TEXT_COLUMNS else f"-{key}"
            reverse = f"-{key}" if first == key else key
            link = reverse if sort == first else first
            state = "ascending" if sort == key else "descending" if sort == f"-{key}" else ""
            out.append((key, link, title, state))
        return out

    def saved_query(self) -> str:
        """The known parameters of this filter and sort as a query string (no page): what a view saves."""
        data = self.cleaned_data
        params: dict = {name: data.get(name) for name in ("q", "source", "host", "kind", *NARROWINGS)}
        params["errors"] = 1 if data.get("errors") else None
        params["filter"] = data.get("filter")
        params["range"] = data.get("range")
        if data.get("range") in ("", "custom", None):
            params["since"] = _local(data.get("since"))
            params["until"] = _local(data.get("until"))
        shown = self.shown()
        params["cols"] = shown if len(shown) < len(PICKABLE) + 1 else None
        params["sort"] = self.current_sort() if self.current_sort() != "-last" else None
        kept = {name: value for name, value in params.items() if value not in (None, "")}
        return urlencode(kept, doseq=True)


def _local(moment: datetime | None) -> str | None:
    """A moment as the custom range's datetime-local inputs hold it (in UTC, the index's zone)."""
    if moment is None:
        return None
    return (moment.astimezone(UTC) if moment.tzinfo else moment).strftime("%Y-%m-%dT%H:%M")


class TimelineForm(forms.Form):
    after = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)
    before = forms.IntegerField(required=False, min_value=1, max_value=MAX_POS)
    at = forms.IntegerField(required=False, min_value=1, max_value=MAX_POS)
    end = forms.BooleanField(required=False)
    # The timeline narrowed to what a count counts (timeline.ONLY): `?errors=1`, `?anchors=1`...
    errors = forms.BooleanField(required=False)
    anchors = forms.BooleanField(required=False)
    unreadable = forms.BooleanField(required=False)
    # Jump by time: the first entry at or after it (`?at=` wins when both are given).
    time = forms.DateTimeField(required=False)
    # The live tail: the file's size the reader has seen, so an unchanged file costs no page.
    seen = forms.IntegerField(required=False, min_value=0)
    # ... and that it shows no entries yet (nor pagers): the first it gets bring the pagers too.
    empty = forms.BooleanField(required=False)

    def clean_time(self):
        when = self.cleaned_data.get("time")
        if when is not None and when.utcoffset():
            try:
                when - when.utcoffset()  # the moment in UTC, as the index holds it
            except OverflowError:
                raise forms.ValidationError("a time the index cannot hold") from None
        return when

    def only(self) -> str:
        return next((key for key in ONLY if self.cleaned_data.get(key)), "")

    def where(self) -> dict:
        data = self.cleaned_data
        narrow = {"only": self.only()} if self.only() else {}
        if data.get("end"):
            return {"end": True, **narrow}
        for key in ("at", "before", "after"):
            if data.get(key) is not None:
                return {key: data[key], **narrow}
        return narrow


class ContextForm(forms.Form):
    # As the API's ?anchor=: unstripped, at most an anchor name's length (NUL is refused by CharField).
    anchor = forms.CharField(required=False, max_length=300, strip=False)
    # The page of messages, as the timeline's pager asks for one: a bad value is ignored (page one).
    after = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)
    before = forms.IntegerField(required=False, min_value=1, max_value=MAX_POS)
    end = forms.BooleanField(required=False, widget=forms.TextInput)  # as text: `?end=0` is no

    def anchor_ref(self) -> str | None:
        """The anchor asked for (a position or a name), or None for the last one."""
        return self.cleaned_data.get("anchor") or None

    def bad_anchor(self) -> bool:
        """The anchor asked for cannot name one (too long, a NUL): no anchor is named so."""
        return not self.is_valid() and "anchor" in self.errors

    def where(self) -> dict:
        """The page asked for, as `context.page()` takes it: only the fields that are valid."""
        data = self.cleaned_data
        if data.get("end"):
            return {"end": True}
        for name in ("before", "after"):
            if data.get(name) is not None:
                return {name: data[name]}
        return {}


class HandoffForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="e.g. phase/review-done")
    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), max_length=20000)
    confirm_stopped = forms.BooleanField(
        required=False, label="The agent has stopped: write the handoff although its turn never ended"
    )
    # The id of the tape's last entry when the form was drawn: a handoff is written only after it.
    after = forms.IntegerField(required=False, min_value=0, widget=forms.HiddenInput)


class PhaseSortForm(forms.Form):
    psort = forms.CharField(required=False, max_length=20)

    def current_sort(self) -> str:
        sort = (self.cleaned_data.get("psort") if self.is_valid() else "") or "index"
        return sort if sort.lstrip("-") in dict(PHASE_COLUMNS) else "index"

    def columns(self) -> list[tuple[str, str, str]]:
        """Each column's title, the sort its link asks for (a second click reverses), its state."""
        sort = self.current_sort()
        out = []
        for key, title in PHASE_COLUMNS:
            first = key if key == "index" else f"-{key}"
            reverse = key if first.startswith("-") else f"-{key}"
            link = reverse if sort == first else first
            state = "ascending" if sort == key else "descending" if sort == f"-{key}" else ""
            out.append((link, title, state))
        return out


class SuggestionForm(forms.Form):
    """`?at=` of the handoff page: the suggested handoff point whose context is previewed."""

    at = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)


class LineageForm(forms.Form):
    cursor = forms.CharField(required=False, max_length=1000)


class CompareForm(forms.Form):
    """The compare page's query: two tapes (`a`, `b`, or `t` twice as the index's checkboxes send
    them), optionally a phase of each, and where each side's aligned steps go on from."""

    a = forms.CharField(required=False, max_length=200)
    b = forms.CharField(required=False, max_length=200)
    pa = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)
    pb = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)
    after_a = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)
    after_b = forms.IntegerField(required=False, min_value=0, max_value=MAX_POS)

    def __init__(self, query, *args, **kwargs) -> None:
        data = query.copy()
        picked = [key for key in query.getlist("t") if key][:2]
        for name, key in zip(("a", "b"), picked, strict=False):
            if not data.get(name):
                data[name] = key
        super().__init__(data, *args, **kwargs)
