"""Hypothesis strategies for malformed exports: any JSON value where a field belongs, and fields that are
almost right (dates at the ends of the calendar, ratings written as 5.0, a bad URL). Shared by the import
and sync tests."""

from __future__ import annotations

from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
)
STAMPS = st.sampled_from(
    ["2026-03-01T06:30:00Z", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-12:00",
     "2026-02-30T00:00:00Z", "2026-03-01", "2026-03-01T06:30:00", "", "Z",
     "2026-03-01T06:30:00.1234567890123Z", "1995-01-01T00:00:00Z"]
)  # fmt: skip


def _maybe(strategy):
    return st.one_of(strategy, JSON_VALUES)


GOOGLE_REVIEWS = st.fixed_dictionaries(
    {},
    optional={
        "name": _maybe(st.just("accounts/1/locations/2/reviews/abc")),
        "reviewId": _maybe(st.sampled_from(["abc", "", "x/y"])),
        "reviewer": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "displayName": _maybe(st.text(max_size=20)),
                    "isAnonymous": JSON_VALUES,
                    "profilePhotoUrl": _maybe(
                        st.sampled_from(["https://x.example/a", "ftp://x", "https://"])
                    ),
                },
            )
        ),
        "starRating": _maybe(st.sampled_from(["ONE", "FIVE", "STAR_RATING_UNSPECIFIED", "SIX"])),
        "comment": _maybe(st.text(max_size=40)),
        "createTime": _maybe(STAMPS),
        "updateTime": _maybe(STAMPS),
        "reviewReply": _maybe(
            st.fixed_dictionaries(
                {}, optional={"comment": _maybe(st.text(max_size=20)), "updateTime": _maybe(STAMPS)}
            )
        ),
    },
)
TRUSTPILOT_REVIEWS = st.fixed_dictionaries(
    {"stars": _maybe(st.integers(0, 6)), "createdAt": _maybe(STAMPS)},
    optional={
        "id": _maybe(st.sampled_from(["64f1", "", "a/b"])),
        "consumer": _maybe(st.fixed_dictionaries({}, optional={"displayName": _maybe(st.text(max_size=20))})),
        "title": _maybe(st.text(max_size=20)),
        "text": _maybe(st.text(max_size=40)),
        "updatedAt": _maybe(STAMPS),
        "isVerified": JSON_VALUES,
        "companyReply": _maybe(
            st.fixed_dictionaries(
                {}, optional={"text": _maybe(st.text(max_size=20)), "createdAt": _maybe(STAMPS)}
            )
        ),
    },
)


CSV_CELLS = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["5", "5.0", "\uff15", "2026-03-01", "03/09/2024", "9999-12-31",
                     "0001-01-01T00:00:00+01:00", "yes", "maybe", "Yelp", "http://x", '"', "\x00", "a;b",
                     "a\tb", "\r\n"]),
)  # fmt: skip
CSV_HEADERS = st.lists(
    st.sampled_from(["author", "rating", "date", "text", "id", "source", "source_url", "reply", "reply_date",
                     "verified", "updated", "title", "Name", "Stars", "Review", "extra", "author"]),
    min_size=1,
    max_size=8,
)  # fmt: skip
