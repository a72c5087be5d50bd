"""Tapes as OpenTelemetry traces of the GenAI conventions: sent to an OTLP/HTTP collector, or as JSON."""
