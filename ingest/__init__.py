"""Importers: review exports (Google, Trustpilot, CSV) merged into reviews.json."""
