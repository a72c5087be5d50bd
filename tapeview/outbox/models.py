"""A write asked for through the web tier, waiting for (or done by) the watcher of its host."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def new_key() -> str:
    return secrets.token_urlsafe(12)


class Request(models.Model):
    """One write to carry out on `host`: what (action, params), for whom (actor), and what it answered."""

    QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, FAILED, CANCELLED)]

    key = models.CharField(max_length=32, unique=True, default=new_key)  # opaque, URL-safe id
    host = models.CharField(max_length=255)  # the host whose watcher carries it out
    action = models.CharField(max_length=100)  # a registered handler's name
    params = models.JSONField(default=dict)
    # Who asked (as accounts.audit.Actor): the watcher writes, and audits, in their name.
    actor = models.CharField(max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    subject = models.CharField(max_length=100, blank=True)  # as AuditEvent.subject: tape:<key>, store:<key>
    target = models.CharField(max_length=500, blank=True)  # what is written to, in words
    page = models.CharField(max_length=500, blank=True)  # the page of what is written to
    state = models.CharField(max_length=10, choices=STATES, default=QUEUED)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True)
    finished_at = models.DateTimeField(null=True)
    claimed_by = models.CharField(max_length=300, blank=True)  # "<machine> <pid>" of the watcher
    # What the synchronous endpoint would have answered: its status, JSON body and headers that matter.
    status = models.IntegerField(null=True)
    body = models.JSONField(null=True)
    headers = models.JSONField(default=dict)
    # The handler's exception in its own words, for pages that say it their own way (as today).
    reason = models.TextField(blank=True)
    cancelled_by = models.CharField(max_length=200, blank=True)

    class Meta:
        indexes = [models.Index(fields=["host", "state", "created_at"], name="outbox_host_state_created")]

    def __str__(self) -> str:
        return f"{self.action} on {self.host} ({self.state})"

    @property
    def finished(self) -> bool:
        return self.state in (self.DONE, self.FAILED, self.CANCELLED)


class Courier(models.Model):
    """The heartbeat of a host's outbox loop (in its `tapeview index --watch`): whether it is listening."""

    host = models.CharField(max_length=255, unique=True)
    beat_at = models.DateTimeField()
    pid = models.IntegerField(default=0)
    stopped = models.BooleanField(default=False)  # stopped cleanly: unseen at once, not after a minute
