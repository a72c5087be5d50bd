"""The memory app: zones, files and stores of agent memory."""

from django.apps import AppConfig


class MemoryAdminConfig(AppConfig):
    name = "memory_admin"
    verbose_name = "Memory"

    def ready(self) -> None:
        from tapeview.tapes.signals import files_unread, source_relabelled, sources_indexed

        from . import catalog

        # After an index run the stores are found and read too, so no version goes unrecorded.
        sources_indexed.connect(catalog.sources_indexed, dispatch_uid="memory_admin.sources_indexed")
        source_relabelled.connect(catalog.source_relabelled, dispatch_uid="memory_admin.source_relabelled")
        # The Sources page names the memory files that are not read, as it names tapes.
        files_unread.connect(catalog.unread_files, dispatch_uid="memory_admin.files_unread")
