"""The metrics app: `/metrics` in Prometheus text format, for the people who run Tapeview."""
