"""The matcher against a plain reference: at each position the longest term whose last word may be plural or
possessive, left to right, no overlaps; property-tested over terms and sentences from a small vocabulary (so
that words repeat, start several terms, and come in every form)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewsd_app.analysis.matcher import Matcher, _variants
from reviewsd_app.analysis.text import Folded
from reviewsd_app.authoring.profile import Profile

WORDS = ("wait", "time", "front", "desk", "price", "bill", "dr", "kim", "glass", "box")
FORMS = ("", "s", "es", "'s")


def reference_matches(terms: set[tuple[str, ...]], tokens: tuple[str, ...]) -> list[tuple[str, int, int]]:
    """(term, first, last) of each match: at each position, every length from the longest down, the last
    word in each of its forms."""
    found, i = [], 0
    longest = max((len(term) for term in terms), default=0)
    while i < len(tokens):
        match = None
        for n in range(min(longest, len(tokens) - i), 0, -1):
            for form in _variants(tokens[i + n - 1]):
                candidate = (*tokens[i : i + n - 1], form)
                if candidate in terms:
                    match = candidate
                    break
            if match:
                break
        if match is None:
            i += 1
            continue
        found.append((" ".join(match), i, i + len(match) - 1))
        i += len(match)
    return found


@settings(max_examples=300, deadline=None)
@given(
    terms=st.sets(
        st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(tuple), min_size=1, max_size=6
    ),
    sentence=st.lists(
        st.tuples(st.sampled_from(WORDS), st.sampled_from(FORMS)).map("".join), min_size=0, max_size=12
    ),
)
def test_matches_are_the_longest_terms_left_to_right(terms, sentence):
    aspects = tuple(
        {"id": f"a{n}", "label": f"Aspect {n}", "terms": [" ".join(term)]}
        for n, term in enumerate(sorted(terms))
    )
    matcher = Matcher(Profile(aspects=aspects))
    # every term is also matched through its aspect's label "aspect N": keep those out of the sentence
    tokens = tuple(sentence)
    got = [(m.term, m.first, m.last) for m in matcher.matches(Folded(" ".join(tokens), tokens))]
    assert got == reference_matches(set(terms), tokens)
