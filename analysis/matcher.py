"""The profile's terms, aliases and names compiled into one matcher over folded sentences."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from ..authoring.profile import Profile
from ..reviews.words import fold
from .text import Folded

HONORIFICS = frozenset({"dr", "dra", "doctor", "doc", "mr", "mrs", "ms", "miss", "prof"})
# per_review's groups, and the profile list each is read from
GROUP_SOURCES = (
    ("aspects", "aspects"),
    ("technicians", "practitioners"),
    ("services", "services"),
    ("problems", "problems"),
    ("service_areas", "service_areas"),
    ("topics", "topics"),
)


@dataclass(frozen=True)
class Match:
    """One term found in a sentence: which record it names, and where."""

    group: str
    id: str
    term: str  # the folded term as matched
    first: int  # index of its first token
    last: int  # index of its last token


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


def _variants(token: str) -> list[str]:
    """The forms a term's last word may stand for in a token: itself, singular, without a possessive."""
    forms = [token]
    if token.endswith("'s"):
        forms.append(token[:-2])
    elif token.endswith("es"):
        forms += [token[:-2], token[:-1]]
    elif token.endswith("s"):
        forms.append(token[:-1])
    return forms


class Matcher:
    """Finds every record the profile's terms name in a folded sentence (longest term first)."""

    def __init__(self, profile: Profile) -> None:
        owners: dict[str, set[tuple[str, str]]] = defaultdict(set)
        technician_terms: dict[str, set[str]] = defaultdict(set)
        # folded term -> as business.toml writes it, in lower case (the first so written), for the phrases
        # insights publish: "explicó" and "same-day", not the folded "explico" and "same day"
        self.written: dict[str, str] = {}
        for group, source in GROUP_SOURCES:
            for record in getattr(profile, source):
                if group == "technicians":
                    for alias in practitioner_aliases(record):
                        technician_terms[fold(alias)].add(record["id"])
                    continue
                for term in _record_terms(record, group):
                    folded = fold(term)
                    if folded:
                        owners[folded].add((group, record["id"]))
                        self.written.setdefault(folded, term.lower())
        for term, ids in technician_terms.items():
            if len(ids) == 1 and term:  # a name two practitioners share names neither
                owners[term].add(("technicians", next(iter(ids))))
        self.ambiguous = sorted(term for term, ids in technician_terms.items() if len(ids) > 1)
        self.owners = {term: tuple(sorted(found)) for term, found in owners.items()}
        # first word -> the lengths of the terms starting with it, longest first; and every term as words.
        # (Trying each term that starts with a word made 5,000 terms 20 times slower: lengths are few.)
        lengths: dict[str, set[int]] = defaultdict(set)
        self._terms: set[tuple[str, ...]] = set()
        for term in self.owners:
            words = tuple(term.split(" "))
            lengths[words[0]].add(len(words))
            self._terms.add(words)
        self._lengths = {word: sorted(found, reverse=True) for word, found in lengths.items()}
        # The tokens a term may start at: a term's first word, or a one-word term as a plural or possessive
        # (_variants). Most tokens start none; checked first, matching 10,000 reviews takes 0.21 s, not 0.60.
        self._starts = set(self._lengths)
        for words in self._terms:
            if len(words) == 1:
                self._starts.update(words[0] + ending for ending in ("s", "es", "'s"))

    def _longest_at(self, tokens: Sequence[str], i: int) -> tuple[str, ...] | None:
        """The longest term starting at token i (its last word may be plural or possessive)."""
        token = tokens[i]
        if token not in self._starts:
            return None
        for n in sorted({n for form in _variants(token) for n in self._lengths.get(form, ())}, reverse=True):
            if n == 1:
                for form in _variants(token):
                    if (form,) in self._terms:
                        return (form,)
                continue
            if i + n > len(tokens) or token not in self._lengths:
                continue
            middle = tuple(tokens[i : i + n - 1])
            for form in _variants(tokens[i + n - 1]):
                if middle + (form,) in self._terms:
                    return middle + (form,)
        return None

    def matches(self, sentence: Folded) -> Iterator[Match]:
        """Every term in the sentence, scanning left to right, the longest at each position, no overlaps."""
        tokens, i = sentence.tokens, 0
        while i < len(tokens):
            words = self._longest_at(tokens, i)
            if words is None:
                i += 1
                continue
            term, last = " ".join(words), i + len(words) - 1
            for group, record_id in self.owners[term]:
                yield Match(group, record_id, term, i, last)
            i = last + 1


def labels_by_group(profile: Profile) -> dict[str, Sequence[Mapping]]:
    """per_review group -> the profile's records for it."""
    return {group: getattr(profile, source) for group, source in GROUP_SOURCES}
