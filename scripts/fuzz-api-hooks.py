"""schemathesis hooks for scripts/fuzz-api.

A conversation-list cursor is opaque: only a `next_cursor` the list returned
is valid, and no generator can invent one. Wherever a case carries a cursor of
the documented shape, it gets the real cursor that scripts/fuzz-api fetched
for the user (FUZZ_API_CURSOR), so the rest of the case is what gets tested.
A cursor outside the shape (a negative case) is left as it is.

A query value that is an object or an array has no `name=value` form: sent
form-exploded it becomes other parameters (`spacing[x]=1`), which the server
rightly ignores, so such cases test nothing and are left out.
"""

import os
import re

import schemathesis

CURSOR = os.environ["FUZZ_API_CURSOR"]
SHAPE = re.compile(r"[A-Za-z0-9_-]{1,96}")


@schemathesis.hook
def filter_case(context, case):
    return not any(isinstance(value, (dict, list)) for value in (case.query or {}).values())


@schemathesis.hook
def map_case(context, case):
    if case.operation.label == "GET /v1/conversations" and case.query:
        cursor = case.query.get("cursor")
        if isinstance(cursor, str) and SHAPE.fullmatch(cursor):
            case.query["cursor"] = CURSOR
    return case
