"""The served data: the data files, their validation, the in-memory dataset and search over it."""
