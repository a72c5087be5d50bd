"""Forms that validate the query strings of the tape pages."""

from __future__ import annotations

from django import forms
from django.db.models import F

COLUMNS = [
    ("label", "Session"),
    ("source", "Source"),
    ("entries", "Entries"),
    ("anchors", "Anchors"),
    ("last_anchor", "Last anchor"),
    ("since", "Since anchor"),
    ("first", "First activity"),
    ("last", "Last activity"),
    ("size", "Size"),
    ("tokens", "Tokens"),
    ("errors", "Errors"),
]
SORTS = {
    "label": "label",
    "source": "source",
    "entries": "entries",
    "anchors": "anchors",
    "last_anchor": "last_anchor",
    "since": "entries_since_anchor",
    "first": "first_at",
    "last": "last_at",
    "size": "size",
    "tokens": "tokens",
    "errors": "errors",
}


class TapeListForm(forms.Form):
    q = forms.CharField(required=False, max_length=200)
    source = forms.CharField(required=False, max_length=100)
    sort = forms.CharField(required=False, max_length=20)
    page = forms.IntegerField(required=False, min_value=1)

    def current_sort(self) -> str:
        sort = self.cleaned_data.get("sort") or "-last"
        return sort if sort.lstrip("-") in SORTS else "-last"

    def ordering(self) -> list:
        sort = self.current_sort()
        field = F(SORTS[sort.lstrip("-")])
        # Tapes without times sort last either way.
        expr = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True)
        return [expr, "label"]

    def columns(self) -> list[tuple[str, str, str]]:
        """Each column's title, the sort its link asks for (a second click reverses), its state."""
        sort = self.current_sort()
        out = []
        for key, title in COLUMNS:
            state = "ascending" if sort == key else "descending" if sort == f"-{key}" else ""
            out.append((f"-{key}" if sort == key else key, title, state))
        return out


class TimelineForm(forms.Form):
    after = forms.IntegerField(required=False, min_value=0)
    before = forms.IntegerField(required=False, min_value=1)
    at = forms.IntegerField(required=False, min_value=1)
    end = forms.BooleanField(required=False)

    def where(self) -> dict:
        data = self.cleaned_data
        if data.get("end"):
            return {"end": True}
        for key in ("at", "before", "after"):
            if data.get(key) is not None:
                return {key: data[key]}
        return {}


class ContextForm(forms.Form):
    # As the API's ?anchor=: unstripped, at most an anchor name's length (NUL is refused by CharField).
    anchor = forms.CharField(required=False, max_length=300, strip=False)

    def anchor_ref(self) -> str | None:
        """The anchor asked for (a position or a name), or None for the last one."""
        return self.cleaned_data.get("anchor") or None


class HandoffForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="e.g. phase/review-done")
    summary = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}), max_length=20000)
    confirm_stopped = forms.BooleanField(
        required=False, label="The agent has stopped: write the handoff although its turn never ended"
    )
