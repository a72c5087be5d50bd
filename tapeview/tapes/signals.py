"""What the tape index tells whoever listens (the search app): the small interface it is fed by.

The index never imports a listener; a listener connects in its AppConfig.ready().
"""

from __future__ import annotations

from django.dispatch import Signal

# A batch of a tape's entries was indexed, inside the index's transaction.
# Arguments: tape (Tape), as it is after the batch (the bulk path builds no object per entry).
entries_indexed = Signal()

# A tape's entries were forgotten (its file was reset or replaced); the tape itself stays.
# Arguments: tape_id (int).
tape_reset = Signal()

# A source of this host was given another label (same kind, same folder): its tape rows now carry
# the new label, keeping their keys. Arguments: host, old, new (labels), tape_ids (the rows moved).
source_relabelled = Signal()

# An index run over these sources has finished (`tapeview index`, `tapeview serve` at start).
# Arguments: specs (list of tapeview.sources.SourceSpec).
sources_indexed = Signal()

# The background indexer (tapes.watcher) has started; it runs until `stop` is set. A listener may
# start work of its own beside it (the OTLP export), in a thread, never in the indexer's way.
# Arguments: stop (threading.Event).
watching = Signal()

# The indexer has read everything it was told of, and a listener may do its own follow-up work
# (search makes the new entries searchable) for at most `budget` seconds (None: until done).
# Arguments: budget (float | None).
indexer_idle = Signal()

# Asked, not told: how many indexed entries are not searchable yet, per source. A listener answers
# with a dict {source label: entries}; none listening (no search app) means none behind.
search_lag = Signal()

# Asked, not told: the files of a source that another app reads (memory files) and may not, and
# why (a link out of the source, a mode this process may not read). A listener answers with a
# dict {source label: [sources.Refusal]}; the Sources page and API list them as problems.
files_unread = Signal()
