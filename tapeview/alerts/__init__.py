"""Alerts: rules evaluated by the indexer as it indexes, each firing once until it clears, sent to a webhook."""
