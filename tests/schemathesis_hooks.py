"""Schemathesis hooks for the contract test.

Documented 400s that JSON Schema cannot express, so schema-valid generation must not produce them:
`since` after `until` and `min_rating` above `max_rating` (rules across two parameters), `sort=relevance`
without `q`, `aspect_sentiment` without `aspect` (the schema's dependentRequired, which OpenAPI's list of
parameters cannot say), and a `cursor` the server did not issue (a cursor is
state: the place of a review on a page the server answered, tied to that request's filters; the tests in
test_search.py and test_http.py page with real ones).
"""

import re

import schemathesis

# What a cursor looks like (schemas/search-params.schema.json): one of this shape that the server did not
# issue is the only schema-valid cursor; a cursor of another shape is negative data, refused with a 400.
CURSOR_SHAPE = re.compile(r"1\.[0-9a-f]{16}\.[1-5]\.[0-9]{4}-[0-9]{2}-[0-9]{2}\.[0-7][0-9A-HJKMNP-TV-Z]{25}")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """Every phase (the coverage phase skips the filters below): no invented cursor of a valid shape."""
    if isinstance(case.query, dict) and isinstance(case.query.get("cursor"), str):
        if CURSOR_SHAPE.fullmatch(case.query["cursor"]):
            case.query.pop("cursor")
    if isinstance(case.query, dict):
        if not case.query.get("aspect"):  # the schema's dependentRequired (/reviews: empty is absent)
            case.query.pop("aspect_sentiment", None)
        if case.query.get("sort") == "relevance" and "q" not in case.query:
            case.query.pop("sort")
        try:
            if float(case.query["min_rating"]) > float(case.query["max_rating"]):
                case.query.pop("max_rating")
        except (KeyError, TypeError, ValueError):
            pass  # one of them missing, or not a number (a 400 the schema says)


@schemathesis.hook
def filter_query(ctx, query):
    if not isinstance(query, dict):
        return True
    since, until = query.get("since"), query.get("until")
    if isinstance(since, str) and isinstance(until, str) and since > until:
        return False
    low, high = query.get("min_rating"), query.get("max_rating")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low > high:
        return False
    return not (query.get("sort") == "relevance" and "q" not in query)
