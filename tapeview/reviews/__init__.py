"""Reviews of tape entries: append-only facts kept beside the derived index, never in the agent's files."""
