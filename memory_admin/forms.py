"""Forms of the memory pages: every query string and every POST is validated by one of these."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict

from .stores.model import text_problem

PRUNE_DAYS = 30  # the agent's own default for `memory.prune`
ZONE_ACTIONS = ("long_term", "daily", "prune", "clear", "restore", "move")


def _writable(text: str) -> None:
    if problem := text_problem(text):
        raise ValidationError(problem, code="text")


class MemoryTextField(forms.CharField):
    """Text written to a memory store, refused as the API refuses it (one limit, one message)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(required=False, strip=False, **kwargs)
        self.validators = [_writable]  # in place of Django's own NUL and length checks: the API's words


class TextEditForm(forms.Form):
    text = MemoryTextField(widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false"}))
    base_version = forms.CharField(widget=forms.HiddenInput, max_length=64)


class Confirmed(forms.Form):
    """A destructive action says it was confirmed; the first POST without it gets the question."""

    confirmed = forms.BooleanField(required=False)


class RestoreForm(Confirmed):
    version = forms.CharField(max_length=64)
    base_version = forms.CharField(max_length=64)


class DiffForm(forms.Form):
    frm = forms.CharField(max_length=64, required=False)
    to = forms.CharField(max_length=64, required=False)


class StoreListForm(forms.Form):
    """`?kind=`: a kind or its family (`nanobot`)."""

    kind = forms.CharField(max_length=40, required=False)


class AsOfForm(forms.Form):
    """`?as_of=` a time, or `?tape=` with `&anchor=` (a position or a name) or `&pos=`: the store then."""

    FIELDS = ("as_of", "tape", "anchor", "pos")
    as_of = forms.DateTimeField(required=False)
    tape = forms.CharField(max_length=32, required=False)
    anchor = forms.CharField(max_length=300, required=False)
    pos = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False)

    @classmethod
    def asked(cls, query: QueryDict) -> bool:
        return any(query.get(name) for name in cls.FIELDS)

    def clean(self) -> dict:
        data = super().clean()
        if data.get("tape"):
            if not (data.get("anchor") or data.get("pos")):
                raise forms.ValidationError("name an anchor (&anchor=) or an entry (&pos=) of the tape")
        elif data.get("anchor") or data.get("pos"):
            raise forms.ValidationError("an anchor or an entry needs its tape (&tape=)")
        elif not data.get("as_of") and "as_of" not in self.errors:
            raise forms.ValidationError("give a time, or a tape's anchor or entry")
        return data


class EmptyForm(forms.Form):
    """The query string of a store page that takes none."""


class PruneForm(forms.Form):
    """`?days=` on a Bub zone's page: preview what a prune of older notes would remove; `?before=`:
    the page of its versions sealed before that position of the tape (the "older" link)."""

    days = forms.IntegerField(min_value=0, max_value=36500, required=False)
    before = forms.IntegerField(min_value=1, max_value=2**31 - 1, required=False)


class VersionPageForm(forms.Form):
    """`?before=` on a store page that lists Tapeview's revisions: the page of those kept before it."""

    before = forms.IntegerField(min_value=1, max_value=2**63 - 1, required=False)


class HistoryForm(forms.Form):
    """`?q=` on nanobot's history page."""

    q = forms.CharField(max_length=200, required=False)


class ZoneForm(Confirmed):
    action = forms.ChoiceField(choices=[(a, a) for a in ZONE_ACTIONS])
    base_version = forms.CharField(max_length=64)
    text = MemoryTextField()
    days = forms.IntegerField(required=False, min_value=0, max_value=36500)
    version = forms.IntegerField(required=False, min_value=1)


class EntryForm(Confirmed):
    action = forms.ChoiceField(choices=[("add", "add"), ("edit", "edit"), ("delete", "delete")])
    base_version = forms.CharField(max_length=64)
    entry_id = forms.CharField(required=False, max_length=200)
    content = forms.CharField(required=False)
    keywords = forms.CharField(required=False, max_length=2000)


class KvForm(Confirmed):
    action = forms.ChoiceField(choices=[("set", "set"), ("delete", "delete")])
    base_version = forms.CharField(max_length=64)
    key = forms.CharField(max_length=1000)
    value = forms.CharField(required=False, strip=False)
