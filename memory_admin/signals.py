"""What the memory app tells whoever listens (the search app): the small interface it is fed by."""

from __future__ import annotations

from django.dispatch import Signal

# A store's content has a version not seen before. Arguments: store (MemoryStore), snapshot
# (memory_admin.stores.model.Snapshot: plain data, its `version` "missing" when the file is gone).
store_changed = Signal()
