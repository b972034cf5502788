"""A starter business.toml (`reviewsd init --preset NAME`) as an owner fills it in: the tests that import,
analyze and check need one that no longer publishes the starter's placeholders."""

from __future__ import annotations


def business_filled_in(toml: str) -> str:
    """The starter with its [business] placeholders (name, url, telephone, geo) edited."""
    toml = toml.replace('name = "My Business"', 'name = "Reyes & Co."')
    toml = toml.replace("https://example.com/", "https://reyes.example/")
    toml = toml.replace('"+1 555 555 0100"', '"+1 812 555 0142"')
    return toml.replace("latitude = 0.0", "latitude = 39.17")


def staff_named(toml: str, name: str) -> str:
    """The starter's placeholder staff ("First Last", "Dr. First Last") named NAME, its id to match."""
    toml = toml.replace("First Last", name)
    return toml.replace("first-last", name.lower().replace(" ", "-"))
