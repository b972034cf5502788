"""Schemathesis hooks for the contract test.

Two documented 400s that JSON Schema cannot express, so schema-valid generation must not produce them:
`since` after `until` (a rule across two parameters), and a `cursor` the server did not issue (a cursor is
state: the place of a review on a page the server answered, tied to that request's filters; the tests in
test_search.py and test_http.py page with real ones).
"""

import schemathesis


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """Every phase (the coverage phase skips the filters below): no invented cursor."""
    if isinstance(case.query, dict):
        case.query.pop("cursor", None)


@schemathesis.hook
def filter_query(ctx, query):
    if not isinstance(query, dict):
        return True
    since, until = query.get("since"), query.get("until")
    return not (isinstance(since, str) and isinstance(until, str) and since > until)
