"""Forms of the memory pages."""

from __future__ import annotations

from django import forms


class TextEditForm(forms.Form):
    text = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 24, "spellcheck": "false"}), required=False, strip=False
    )
    base_version = forms.CharField(widget=forms.HiddenInput, max_length=64)


class RestoreForm(forms.Form):
    version = forms.CharField(max_length=64)
    base_version = forms.CharField(max_length=64)


class DiffForm(forms.Form):
    frm = forms.CharField(max_length=64, required=False)
    to = forms.CharField(max_length=64, required=False)
