"""The data layer: the business profile (business.toml), its presets, and atomic JSON writes."""
