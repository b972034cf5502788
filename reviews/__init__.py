"""The data layer: the data files, the business profile (business.toml), their validation and atomic
writes, the in-memory dataset and search over it."""
