"""Offline authoring, beside ingest/ and analysis/: business.toml (the profile and the presets `reviewsd init`
writes), checking what we write against schemas/, and replacing data files atomically. The server never
imports it."""
