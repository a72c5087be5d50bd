"""Forms of the review pages: a review as an operator writes it, the review list's filters, and queues."""

from __future__ import annotations

from django import forms

from . import ledger, queues
from .models import QUEUE_SPANS, SPANS, VERDICTS, Queue

SCORES = [("", "–"), *((str(n), f"{n}") for n in range(1, 6))]


class ReviewForm(forms.Form):
    score = forms.TypedChoiceField(choices=SCORES, coerce=int, empty_value=None, required=False)
    verdict = forms.ChoiceField(choices=[("", "–"), *((v, v) for v in VERDICTS)], required=False)
    labels = forms.CharField(
        required=False, max_length=500, help_text="separated by commas or spaces, e.g. wrong-tool, slow"
    )
    comment = forms.CharField(
        required=False, max_length=ledger.MAX_COMMENT, widget=forms.Textarea(attrs={"rows": 2})
    )
    span = forms.ChoiceField(choices=[(s, s) for s in SPANS], initial="entry", required=False)
    end = forms.IntegerField(required=False, min_value=1, help_text="of a turn: its last entry")
    # Where to go once recorded: back to the timeline, or this entry's review history.
    back = forms.ChoiceField(
        choices=[("history", "history"), ("timeline", "timeline"), ("conversation", "conversation")],
        required=False,
        widget=forms.HiddenInput,
    )
    # The conversation's page to go back to: its cursor, as the page handed it out.
    cursor = forms.RegexField(
        regex=r"^[A-Za-z0-9_-]*$", max_length=1000, required=False, widget=forms.HiddenInput
    )

    def __init__(self, *args, current: list | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # A correction names one of the current reviews of this entry, or none.
        choices = [("", "nothing: a new review")]
        for r in current or []:
            choices.append((str(r.uid), f"the {r.span} review by {r.author}, {r.created_at:%Y-%m-%d %H:%M}"))
        self.fields["supersedes"] = forms.ChoiceField(choices=choices, required=False, label="Corrects")

    def review(self) -> dict:
        """The arguments of ledger.add() (ledger.ReviewRefused for what only it can tell)."""
        data = self.cleaned_data
        return {
            "score": data.get("score"),
            "verdict": data.get("verdict") or "",
            "labels": ledger.split_labels(data.get("labels") or ""),
            "comment": data.get("comment") or "",
            "span": data.get("span") or "entry",
            "end": data.get("end"),
            "supersedes": data.get("supersedes") or None,
        }


class ReviewListForm(forms.Form):
    label = forms.CharField(required=False, max_length=ledger.MAX_LABEL)
    score = forms.TypedChoiceField(choices=SCORES, coerce=int, empty_value=None, required=False)
    verdict = forms.ChoiceField(choices=[("", "any"), *((v, v) for v in VERDICTS)], required=False)
    tape = forms.CharField(required=False, max_length=32)
    state = forms.ChoiceField(
        choices=[("current", "current"), ("all", "with history"), ("superseded", "superseded")],
        required=False,
    )
    page = forms.IntegerField(required=False, min_value=1)

    def filters(self) -> dict:
        """The arguments of ledger.find(); a field that does not validate filters nothing."""
        data = self.cleaned_data if self.is_bound else {}
        state = data.get("state") or "current"
        return {
            "label": data.get("label") or None,
            "score": data.get("score"),
            "verdict": data.get("verdict") or None,
            "tape": data.get("tape") or None,
            "current": {"current": True, "superseded": False}.get(state),
        }


class QueueForm(forms.Form):
    name = forms.CharField(max_length=queues.MAX_NAME)
    description = forms.CharField(required=False, max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))


def reviewer_choices(blank: str) -> list[tuple[str, str]]:
    return [("", blank), *((str(u.pk), u.get_username()) for u in queues.reviewers())]


class SendForm(forms.Form):
    """What to send to a queue: one target (tape, span, pos, end) or the sessions of a filter (`query`)."""

    queue = forms.ModelChoiceField(queryset=Queue.objects.order_by("name"), empty_label=None)
    tape = forms.CharField(required=False, max_length=32)
    span = forms.ChoiceField(choices=[(s, s) for s in QUEUE_SPANS], required=False)
    pos = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    end = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    query = forms.CharField(required=False, max_length=4000)
    reviewer = forms.ChoiceField(required=False)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].choices = reviewer_choices("nobody yet")


class AssignForm(forms.Form):
    reviewer = forms.ChoiceField(required=False)
    which = forms.ChoiceField(
        choices=[("unassigned", "the unassigned open items"), ("open", "every open item")],
        initial="unassigned",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].choices = reviewer_choices("nobody (unassign)")
