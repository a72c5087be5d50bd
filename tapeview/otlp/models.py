"""What the indexer's export has sent of each tape: derived, like the index, and rebuilt by sending again."""

from __future__ import annotations

from django.db import models

from tapeview.tapes.models import Tape


class Sent(models.Model):
    """How far a tape's turns went to the collector (TAPEVIEW_OTLP_ENDPOINT): a restart sends none twice."""

    tape = models.OneToOneField(Tape, on_delete=models.CASCADE, related_name="otlp_sent")
    # Which tape was sent: its first line's fingerprint (an append-only tape), else its first turn's.
    # Another one here means the tape was made again, and its turns go out again from the first.
    generation = models.CharField(max_length=64, blank=True)
    turns = models.IntegerField(default=0)  # complete turns sent
    next_pos = models.IntegerField(default=1)  # where the first turn not sent begins (append-only tapes)
    phase = models.CharField(max_length=300, blank=True)  # the phase and model there
    model = models.CharField(max_length=200, blank=True)
    checked = models.DateTimeField(null=True)  # the tape's indexed_at when last looked at: unchanged since
