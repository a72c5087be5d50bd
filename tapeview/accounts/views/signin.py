"""Sign-in by one-time link, for the first admin and for anyone an admin sends one to."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import PasswordChangeForm, SetPasswordForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.http import require_http_methods

from .. import signin, throttle


@login_not_required
@require_http_methods(["GET", "HEAD", "POST"])
def signin_link(request: HttpRequest, token: str) -> HttpResponse:
    """A one-time link: GET (and HEAD) shows a button and leaves the link unused, as link scanners and
    chat unfurlers fetch it; the button's POST uses it, then a user without a password sets one.
    Templates `registration/signin_link.html`, `registration/signin_failed.html` when it fails."""
    user = signin.redeem(token) if request.method == "POST" else signin.holder(token)
    if user is None:
        # Only bad links are throttled: a valid one is never refused for others' failures.
        if not throttle.allowed(request, throttle.LINK):
            return throttle.lockout(request, credentials=throttle.LINK)
        throttle.failed(request, throttle.LINK)
        return render(request, "registration/signin_failed.html", status=403)
    if request.method != "POST":
        context = {"name": user.get_username(), "has_password": user.has_usable_password()}
        return render(request, "registration/signin_link.html", context)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    if not user.has_usable_password():
        messages.info(request, "Signed in with a one-time link. Set a password to sign in again later.")
        return redirect("accounts:password_change")
    return redirect("tapes:tape_list")


class PasswordView(auth_views.PasswordChangeView):
    """Change a password; a user signed in by link has none yet, so no old one is asked."""

    success_url = reverse_lazy("tapes:tape_list")

    def get_form_class(self):
        return PasswordChangeForm if self.request.user.has_usable_password() else SetPasswordForm
