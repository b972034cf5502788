"""The data layer: the data files, their validation, the in-memory dataset and search over it."""
