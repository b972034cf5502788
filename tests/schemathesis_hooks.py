"""Schemathesis hooks for the contract test.

Two documented 400s that JSON Schema cannot express, so schema-valid generation must not produce them:
`since` after `until` (a rule across two parameters), and a `cursor` the server did not issue (a cursor is
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


@schemathesis.hook
def filter_query(ctx, query):
    if not isinstance(query, dict):
        return True
    since, until = query.get("since"), query.get("until")
    return not (isinstance(since, str) and isinstance(until, str) and since > until)
