"""Full-text search over every tape entry and memory store, in the index database's own engine."""
