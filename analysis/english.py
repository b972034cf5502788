"""The English the insights and the pages are written in: a count with its noun, a month by its name. Pure and
without imports, so that the pages use it without loading the model."""

from __future__ import annotations

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def plural(count: int, noun: str) -> str:
    """ "1 review", "2 reviews", "0 reviews"."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def month_name(month: str) -> str:
    """'2026-03' -> 'March 2026'."""
    year, number = month.split("-")
    return f"{MONTHS[int(number) - 1]} {year}"
