"""The outbox: writes asked for on one host, carried out by the watcher of the host that owns the file."""
