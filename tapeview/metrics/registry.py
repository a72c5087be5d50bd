"""What `/metrics` answers: this process's own metrics and the index's figures, in one registry."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, ProcessCollector

from .gauges import IndexCollector

# Not prometheus_client's global registry: only `/metrics` reads the database, never an import.
REGISTRY = CollectorRegistry()
ProcessCollector(registry=REGISTRY)
REGISTRY.register(IndexCollector())
