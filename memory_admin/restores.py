"""Restoring an earlier version of a text store, a revision Tapeview kept or a commit of its git store:
the question with what it changes, then the write, conditional on the version the question showed."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from tapeview.accounts.roles import role_required

from . import versions
from .conflicts import restoring
from .forms import RestoreForm
from .kinds import kind_of
from .lookup import find_store
from .models import MemoryStore
from .stores.model import StoreError
from .views import confirm_page, refused, write_page


@role_required("operator")
@require_POST
def store_restore(request: HttpRequest, key: str) -> HttpResponse:
    """Write an earlier version back, as a new version; stale if the file changed meanwhile.

    Template `memory_admin/confirm.html` first (the question, with the diff of what it changes).
    """
    store = find_store(key)
    form = RestoreForm(request.POST)
    if not form.is_valid():
        raise Http404("no such version")
    version, base = form.cleaned_data["version"], form.cleaned_data["base_version"]
    try:
        versions.version_text(store, version)
    except LookupError as exc:
        raise Http404(str(exc)) from None
    except StoreError as exc:
        return refused(request, store, exc)
    question, done, change = restore_words(store, version)
    if not form.cleaned_data["confirmed"]:
        return confirm_page(request, store, question, *versions.restore_changes(store, version))
    return write_page(
        request, store, "restore", base, done, change=restoring(change, version), version=version
    )


def restore_words(store: MemoryStore, version: str) -> tuple[str, str, str]:
    """The question before restoring `version`, what the page says after it, and the restore in words
    (a conflict's "Your change: …")."""
    commit = kind_of(store).commit_of(version)
    if commit is not None:
        # A commit's text may be any version: the file gets that text, under its own content hash.
        name = f"the text of commit {commit[:8]}"
        question = f"Restore {name}? The file will hold that text again; the commit stays in the history."
        return question, f"Restored {name}", f"restore {name}"
    # A version is its content's hash: the file gets that very version back, not a new one.
    name = f"version {version[:16]}"
    return f"Restore {name}? The file will hold {name} again.", f"Restored {name}", f"restore {name}"
