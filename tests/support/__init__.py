"""Helpers the tests share: data factories, the hub's test support, a real HTTPS subscriber. Fixtures defined
here are registered for every test by conftest.py."""
