"""The commands that produce a data directory: `reviewsd init`, `reviewsd import`, `reviewsd analyze`."""
