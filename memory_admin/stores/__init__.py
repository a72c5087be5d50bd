"""Plain-Python readers and writers of agent memory, one module per memory kind."""
