"""What the tape index tells whoever listens (the search app): the small interface it is fed by.

The index never imports a listener; a listener connects in its AppConfig.ready().
"""

from __future__ import annotations

from django.dispatch import Signal

# A batch of a tape's entries was indexed, inside the index's transaction.
# Arguments: tape (Tape), entries (list of tapeview.sources.Entry: plain dataclasses).
entries_indexed = Signal()

# A tape's entries were forgotten (its file was reset or replaced); the tape itself stays.
# Arguments: tape_id (int).
tape_reset = Signal()

# An index run over these sources has finished (`tapeview index`, `tapeview serve` at start).
# Arguments: specs (list of tapeview.sources.SourceSpec).
sources_indexed = Signal()
