"""schemathesis hooks for scripts/fuzz-api.

A conversation-list cursor is opaque: only a `next_cursor` the list returned
is valid, and no generator can invent one. Wherever a case carries a cursor of
the documented shape, it gets the real cursor that scripts/fuzz-api fetched
for the user (FUZZ_API_CURSOR), so the rest of the case is what gets tested;
the mentions list's `before` likewise (FUZZ_API_MENTIONS_CURSOR), and the
`before` of the operator's lists, the moderation queue's
(FUZZ_API_REPORTS_CURSOR) and the audit log's (FUZZ_API_AUDIT_CURSOR). A
cursor outside the shape (a negative case) is left as it is. (Real report
ids, like the other path parameters, come from the run's configuration.)

A page of history (and of a thread) takes its query as one form-exploded object (`page` in
openapi.yaml). A negative case that turns one of its values into an object or
an array sends other parameters instead (`spacing[x]=1`, which the server
rightly ignores, as any unknown parameter), and one that turns the whole
object into a scalar sends `page=...`: neither has a `name=value` form, so
such cases test nothing and are left out.

A blurhash's length follows from its first character, which no schema can
say: an avatar's (or a conversation image's) blurhash of the documented
shape becomes a real one, so the
rest of the case is what gets tested (a blurhash outside the shape is left
as it is).

User search and profiles by id share a path: a case gives `q` (with `limit`,
and no cursor, which no generator can invent) or `ids` alone; the server
answers 400 to both or neither, as the suite tests.

Custom data (`data` of messages, conversations, members and profiles) may
hold no U+0000 and no lone surrogate in its keys and strings, which the
schema states in words only (a rule on every string at any depth of an
object of any shape is beyond what a generator reads): each such character
of a case's `data` becomes `?`, so the rest of the case is what gets tested.
The suite tests the refusal.

A member who removes themselves has left: the conversation is then rightly
not found for them, and the stateful phase, which follows a creation's links
after it, would report that 404 as a created resource gone missing (it counts
only a DELETE of the resource itself as its end). Leaving is tested by the
suite; here the fuzzing user (FUZZ_API_USER) does not remove themselves.
"""

import os
import re

import schemathesis

# An import's body is NDJSON text: generated strings are sent as text, so
# that the server's line-by-line reading and its reports are what gets tested.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")

USER = os.environ["FUZZ_API_USER"]
# The operator's run has no conversation list or mentions of its own.
CURSOR = os.environ.get("FUZZ_API_CURSOR", "")
MENTIONS_CURSOR = os.environ.get("FUZZ_API_MENTIONS_CURSOR", "")
# The real `next` that each list paged with `before` returned, by operation.
BEFORE_CURSORS = {
    "GET /v1/mentions": MENTIONS_CURSOR,
    "GET /v1/admin/reports": os.environ["FUZZ_API_REPORTS_CURSOR"],
    "GET /v1/admin/audit": os.environ["FUZZ_API_AUDIT_CURSOR"],
}
SHAPE = re.compile(r"[A-Za-z0-9_-]{1,96}")
BLURHASH_SHAPE = re.compile(r"[0-9A-Za-z#$%*+,\-.:;=?@\[\]^_{|}~]{6,166}")
BLURHASH = "LEHV6nWB2yk8pyo0adR*.7kCMdnj"
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
PAGE_QUERY = {
    "limit", "before", "after", "around", "around_time", "viewport_height", "viewport_width", "font_size",
    "line_height", "average_character_width", "horizontal_padding", "vertical_padding", "max_width_fraction",
    "max_attachment_height", "attachment_row_height", "attachment_spacing", "spacing",
}


@schemathesis.hook
def filter_case(context, case):
    query = case.query or {}
    if any(isinstance(value, (dict, list)) for value in query.values()):
        return False
    if case.operation.label == "DELETE /v1/conversations/{id}/members/{user_id}":
        return (case.path_parameters or {}).get("user_id") != USER
    if case.operation.label in ("GET /v1/users", "GET /v1/admin/users"):
        if "q" in query:
            return "ids" not in query and "cursor" not in query
        return "ids" in query and "limit" not in query and "cursor" not in query
    if case.operation.label in (
        "GET /v1/conversations/{id}/messages", "GET /v1/conversations/{id}/messages/{seq}/thread"
    ):
        return "page" not in query and not any(key.split("[", 1)[0] in PAGE_QUERY for key in query if "[" in key)
    return True


def without_unstorable(value):
    """`value` with each U+0000 and lone surrogate of its keys and strings replaced."""
    if isinstance(value, str):
        return UNSTORABLE.sub("?", value)
    if isinstance(value, list):
        return [without_unstorable(item) for item in value]
    if isinstance(value, dict):
        return {without_unstorable(key): without_unstorable(item) for key, item in value.items()}
    return value


@schemathesis.hook
def map_case(context, case):
    if isinstance(case.body, dict) and isinstance(case.body.get("data"), dict):
        case.body["data"] = without_unstorable(case.body["data"])
    if case.operation.label == "GET /v1/conversations" and case.query:
        cursor = case.query.get("cursor")
        if isinstance(cursor, str) and SHAPE.fullmatch(cursor):
            case.query["cursor"] = CURSOR
    pictures = {"PUT /v1/admin/users/{user_id}/profile": "avatar", "PUT /v1/admin/conversations/{id}/image": "image"}
    if case.operation.label in pictures and isinstance(case.body, dict):
        avatar = case.body.get(pictures[case.operation.label])
        if isinstance(avatar, dict) and isinstance(avatar.get("blurhash"), str) \
                and BLURHASH_SHAPE.fullmatch(avatar["blurhash"]):
            avatar["blurhash"] = BLURHASH
    real = BEFORE_CURSORS.get(case.operation.label)
    if real and case.query:
        cursor = case.query.get("before")
        if isinstance(cursor, str) and SHAPE.fullmatch(cursor):
            case.query["before"] = real
    return case
