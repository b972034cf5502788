"""The profile's terms, aliases and names compiled into one matcher over folded sentences."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from ..reviews.profile import Profile
from .text import Folded, fold

HONORIFICS = frozenset({"dr", "dra", "doctor", "doc", "mr", "mrs", "ms", "miss", "prof"})
# per_review's groups, and the profile list each is read from
GROUP_SOURCES = (("aspects", "aspects"), ("technicians", "practitioners"), ("services", "services"),
                 ("problems", "problems"), ("service_areas", "service_areas"), ("topics", "topics"))


@dataclass(frozen=True)
class Match:
    """One term found in a sentence: which record it names, and where."""

    group: str
    id: str
    term: str       # the folded term as matched
    first: int      # index of its first token
    last: int       # index of its last token


def _record_terms(record: Mapping, group: str) -> list[str]:
    terms = [record["label"]] if group != "technicians" and record.get("label") else []
    return terms + list(record.get("terms", ())) + list(record.get("aliases", ()))


def practitioner_aliases(record: Mapping) -> list[str]:
    """A practitioner's name, label and aliases, and the forms derived from the name: without the
    title, surname, title + surname, first name."""
    names = [record["name"], *record.get("aliases", ())] + ([record["label"]] if record.get("label") else [])
    words = [w for w in fold(record["name"]).split() if w not in HONORIFICS]
    derived = []
    if len(words) >= 2:
        derived = [" ".join(words), words[-1], words[0]]
        derived += [f"{title} {words[-1]}" for title in ("dr", "dra", "doctor")]
    return names + derived


def _term_pattern(term: str) -> str:
    body = re.escape(term)
    plural = "(?:s|es)?" if term[-1].isalpha() else ""
    return rf"(?<![a-z0-9']){body}{plural}(?![a-z0-9'])"


class Matcher:
    """Finds every record the profile's terms name in a folded sentence (longest term first)."""

    def __init__(self, profile: Profile) -> None:
        owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
        technician_terms: dict[str, set[str]] = defaultdict(set)
        for group, source in GROUP_SOURCES:
            for record in getattr(profile, source):
                if group == "technicians":
                    for alias in practitioner_aliases(record):
                        technician_terms[fold(alias)].add(record["id"])
                    continue
                for term in _record_terms(record, group):
                    if fold(term):
                        owners[fold(term)].add((group, record["id"]))
        for term, ids in technician_terms.items():
            if len(ids) == 1 and term:  # a name two practitioners share names neither
                owners[term].add(("technicians", next(iter(ids))))
        self.ambiguous = sorted(term for term, ids in technician_terms.items() if len(ids) > 1)
        self.owners = {term: tuple(sorted(found)) for term, found in owners.items()}
        ordered = sorted(self.owners, key=lambda t: (-len(t), t))
        self._regex = re.compile("|".join(f"(?P<t{i}>{_term_pattern(t)})" for i, t in enumerate(ordered))) \
            if ordered else None
        self._terms = ordered

    def matches(self, sentence: Folded) -> Iterator[Match]:
        if self._regex is None or not sentence.text:
            return
        for found in self._regex.finditer(sentence.text):
            term = self._terms[int(found.lastgroup[1:])]
            first, last = sentence.token_at(found.start()), sentence.token_at(found.end() - 1)
            for group, record_id in self.owners[term]:
                yield Match(group, record_id, term, first, last)


def labels_by_group(profile: Profile) -> dict[str, Sequence[Mapping]]:
    """per_review group -> the profile's records for it."""
    return {group: getattr(profile, source) for group, source in GROUP_SOURCES}
