"""Schemathesis hooks for the contract test.

`since` after `until` is a documented 400 that JSON Schema cannot express (a rule
across two parameters), so schema-valid generation must not produce it.
"""

import schemathesis


@schemathesis.hook
def filter_query(ctx, query):
    if not isinstance(query, dict):
        return True
    since, until = query.get("since"), query.get("until")
    return not (isinstance(since, str) and isinstance(until, str) and since > until)
