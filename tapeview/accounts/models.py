"""People's sign-in links, services' API tokens, and the audit log of every write."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SignInToken(models.Model):
    """A one-time sign-in link; only the hash of its token is kept."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True)


class ApiToken(models.Model):
    """A service's key to the API: only the sha256 of the token and its first characters are kept."""

    READ, WRITE, METRICS = "read", "write", "metrics"
    # metrics: a scraper's key to /metrics alone, never to the API (a leaked one reads no tape).
    SCOPES = [(READ, "read"), (WRITE, "read and write"), (METRICS, "metrics only")]

    name = models.CharField(max_length=100)
    scope = models.CharField(max_length=10, choices=SCOPES, default=READ)
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=16)  # shown so an admin can tell tokens apart
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name", "-created_at"]
        constraints = [
            # A name is reused only once its token is revoked (rotation: revoke, then create again).
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(revoked_at__isnull=True), name="apitoken_live_name"
            )
        ]

    def __str__(self) -> str:
        return self.name


class AuditEvent(models.Model):
    """One write made through Tapeview: who, when, what it wrote to, the versions before and after.

    A memory write is recorded before it touches the file, as a pending intent, and settled after:
    so a writer killed mid-write leaves a pending row, never a write with no row at all.
    """

    PENDING, WRITTEN, FAILED, NOT_WRITTEN = "pending", "written", "failed", "not written"
    REFUSED = "refused"
    OUTCOMES = [
        (PENDING, "pending"),  # recorded before the write; not settled yet
        (WRITTEN, "written"),
        (FAILED, "failed"),  # an error stopped it before the file changed
        (NOT_WRITTEN, "not written"),  # its writer stopped, and the file never held its version
        (REFUSED, "refused"),  # a conflict: the file changed since its editor read it; nothing written
    ]

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    actor = models.CharField(max_length=200)  # the user's name, or "token:<name>"
    # What was written to, as "<app>:<key>" (store:<store key>, tape:<tape key>): kept whatever the
    # index forgets, since the index is derived and this log is not.
    subject = models.CharField(max_length=100, blank=True, db_index=True)
    target = models.CharField(max_length=500)  # what was written, in words
    action = models.CharField(max_length=40)
    before = models.CharField(max_length=64, blank=True)
    after = models.CharField(max_length=64, blank=True)
    diff = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    # Rows made before outcomes were kept are all of writes that happened: hence the default.
    outcome = models.CharField(max_length=20, choices=OUTCOMES, default=WRITTEN)
    why = models.CharField(max_length=300, blank=True)  # the error, or how the outcome was learnt
    writer = models.CharField(max_length=300, blank=True)  # "<host> <pid>" of a pending write's process

    class Meta:
        ordering = ["-at", "-id"]

    @property
    def outcome_text(self) -> str:
        """The outcome as the audit page shows it: "written", "failed: No space left on device", ..."""
        return f"{self.outcome}: {self.why}" if self.why else self.outcome
