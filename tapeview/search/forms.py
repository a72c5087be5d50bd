"""The search page's query string: the words, the filters, the order, the page."""

from __future__ import annotations

from django import forms
from django.db.models import Q

from tapeview.tapes import expression
from tapeview.tapes.models import Anchor, Tape

from .engine import ORDERS
from .feed import LAST_POS

KINDS = [
    ("message", "message"),
    ("tool_call", "tool call"),
    ("tool_result", "tool result"),
    ("anchor", "anchor"),
    ("event", "event"),
    ("system", "system"),
    ("error", "error"),
    ("metadata", "metadata"),
    ("unreadable", "unreadable"),
]
ROLES = ["user", "assistant", "system", "tool"]
TABS = ["tapes", "memory"]


class SearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=500)
    tab = forms.ChoiceField(choices=[(t, t) for t in TABS], required=False)
    order = forms.ChoiceField(choices=[(o, o) for o in ORDERS], required=False)
    page = forms.IntegerField(required=False, min_value=1, max_value=1000)
    count = forms.ChoiceField(choices=[("capped", "capped"), ("exact", "exact")], required=False)
    # tapes
    source = forms.CharField(required=False, max_length=100)
    tape = forms.CharField(required=False, max_length=32)
    kind = forms.MultipleChoiceField(choices=KINDS, required=False)
    role = forms.CharField(required=False, max_length=40)
    name = forms.CharField(required=False, max_length=200)
    since = forms.DateField(required=False)
    until = forms.DateField(required=False)
    from_anchor = forms.IntegerField(required=False, min_value=1, max_value=LAST_POS)
    to_anchor = forms.IntegerField(required=False, min_value=1, max_value=LAST_POS)
    review_label = forms.CharField(required=False, max_length=40, label="Reviewed with label")
    review_score = forms.IntegerField(required=False, min_value=1, max_value=5, label="Reviewed with score")
    filter = forms.CharField(required=False, label="Filter")  # the filter language of the session index
    # memory
    store = forms.CharField(required=False, max_length=32)
    store_kind = forms.CharField(required=False, max_length=40)

    def clean_filter(self) -> Q | None:
        text = self.cleaned_data.get("filter") or ""
        try:
            return expression.tape_q(text) if text else None
        except expression.FilterError as exc:
            raise forms.ValidationError(f"The filter does not parse: {exc}.") from None

    def clean(self) -> dict:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", "The range ends before it starts.")
        first, last = data.get("from_anchor"), data.get("to_anchor")
        if first is None and last is None:
            return data
        tape = Tape.objects.filter(key=data.get("tape") or "").first()
        if tape is None:
            self.add_error("from_anchor", "Choose a tape to search within one of its phases.")
            return data
        anchors = set(Anchor.objects.filter(tape=tape).values_list("pos", flat=True))
        for field in ("from_anchor", "to_anchor"):
            if data.get(field) is not None and data[field] not in anchors:
                self.add_error(field, f"No anchor of this tape is at position {data[field]}.")
        if first is not None and last is not None and last <= first:
            self.add_error("to_anchor", "The phase must end after it starts.")
        return data

    def current_tab(self) -> str:
        chosen = self.cleaned_data.get("tab") if self.is_valid() else self.data.get("tab")
        return chosen if chosen in TABS else "tapes"

    def offset(self, size: int) -> int:
        return ((self.cleaned_data.get("page") or 1) - 1) * size

    def exact_count(self) -> bool:
        return self.cleaned_data.get("count") == "exact"

    def current_order(self) -> str:
        return self.cleaned_data.get("order") or "relevance"

    def tape_filters(self) -> dict:
        """The keyword arguments of engine.search."""
        data = self.cleaned_data
        first, last = data.get("from_anchor"), data.get("to_anchor")
        within = None if first is None and last is None else (first or 0, last or LAST_POS + 1)
        return {
            "source": data.get("source") or None,
            "tape_key": data.get("tape") or None,
            "kinds": data.get("kind") or None,
            "role": data.get("role") or None,
            "name": data.get("name") or None,
            "since": data.get("since"),
            "until": data.get("until"),
            "within": within,
            "review_label": data.get("review_label") or None,
            "review_score": data.get("review_score"),
            "kept": data.get("filter"),
        }

    def memory_filters(self) -> dict:
        """The keyword arguments of engine.search_memory."""
        data = self.cleaned_data
        return {
            "store_key": data.get("store") or None,
            "kind": data.get("store_kind") or None,
        }
