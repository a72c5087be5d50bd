"""The reviews app: operators' scores, verdicts and labels of entries, turns and phases, kept as facts."""

from django.apps import AppConfig


class ReviewsConfig(AppConfig):
    name = "tapeview.reviews"
    label = "reviews"
    verbose_name = "Reviews"

    def ready(self) -> None:
        from django import forms

        from tapeview.tapes.expression import add_field
        from tapeview.tapes.listing import add_narrowing

        from .ledger import labelled_tapes, reviewed_tape_keys

        add_field("label", "a label of the tape's current reviews", labelled_tapes)

        # The session index narrows to tapes with a current review of this label or score.
        add_narrowing(
            "review_label",
            forms.CharField(required=False, max_length=40, label="reviewed as"),
            lambda tapes, label: tapes.filter(key__in=reviewed_tape_keys(label=label)),
        )
        add_narrowing(
            "review_score",
            forms.TypedChoiceField(
                required=False, coerce=int, empty_value=None, label="review score",
                choices=[("", "any"), *((n, str(n)) for n in range(1, 6))],
            ),
            lambda tapes, score: tapes.filter(key__in=reviewed_tape_keys(score=score)),
        )  # fmt: skip
