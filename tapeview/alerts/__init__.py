"""Alerts: rules the indexer evaluates as it indexes, each firing once until it clears, sent to webhooks."""
