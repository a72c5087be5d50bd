"""The rule form of the Alerts page: fields as the API's, checked by `rules.check`."""

from __future__ import annotations

from django import forms

from . import rules
from .models import Rule


class RuleForm(forms.Form):
    name = forms.CharField(max_length=100)
    condition = forms.ChoiceField(choices=Rule.CONDITIONS)
    threshold = forms.FloatField(
        required=False, label="Threshold", help_text="errors: K; budget: share of the window; cost: USD a day"
    )
    minutes = forms.IntegerField(required=False, label="Minutes", help_text="errors: the window; silent: N")
    scope = forms.ChoiceField(choices=Rule.SCOPES, required=False)
    scope_value = forms.CharField(max_length=255, required=False, label="Scope value")
    webhook = forms.CharField(max_length=1000, required=False, label="Webhook URL")
    enabled = forms.BooleanField(required=False, initial=True)

    @classmethod
    def of(cls, rule: Rule) -> RuleForm:
        return cls(initial={f: getattr(rule, f) for f in rules.FIELDS})

    def clean(self) -> dict:
        data = super().clean()
        if self.errors:
            return data
        try:
            rules.check(self.rule_input())
        except rules.RuleRefused as exc:
            self.add_error(exc.field, exc.message)
        return data

    def rule_input(self) -> rules.RuleInput:
        data = self.cleaned_data
        return rules.RuleInput(
            name=data["name"],
            condition=data["condition"],
            threshold=data.get("threshold"),
            minutes=data.get("minutes"),
            scope=data.get("scope") or "",
            scope_value=data.get("scope_value") or "",
            webhook=data.get("webhook") or "",
            enabled=bool(data.get("enabled")),
        )
