#!/usr/bin/env python3
"""Frame-by-frame fuzzer of the live stream (`GET /v1/stream`, docs/protocol.md).

Runs against one server that is already up (scripts/fuzz-stream starts one):

    fuzz_stream.py --url http://127.0.0.1:PORT --secret HEX --pid PID [--seed N] [--iterations N]
    fuzz_stream.py --self-test

Every iteration is one WebSocket connection whose frames come from its own
random generator, seeded by (seed, iteration), so `--only ITERATION` replays
one of them. Each frame is followed by a `ping` frame: the frames the server
answers with until its `pong` are compared with what docs/protocol.md
promises for that frame (an `error` with its code and `ref`, `subscribed`,
`ack`, ...), or the socket must close with the documented code. Live events
(`message`, `typing`, `read`, ...) may arrive at any time, but only for a
conversation the socket is subscribed to, in seq order with no gap; inbox
frames (`conversation_activity`, and `read` with a `cursor`) only after
`subscribe_inbox`, and only of the user's own conversation. User C
keeps writing private messages into a conversation of its own meanwhile;
nothing of it (its id, its bodies) may reach a socket of A or B, except the
`ref` of an `error` that answers a frame naming that id.

Afterwards the server must still be alive and answer (`/readyz`, a send, a
live subscription that receives it), and its memory and sockets must be
back near the baseline measured before the fuzzing. Exits 1 on any
violation, printing the seed and the iteration that reproduce it.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import collections
import contextlib
import dataclasses
import hashlib
import hmac
import json
import os
import random
import sys
import time
import urllib.error
import urllib.request
import uuid

try:
    import websockets
    from websockets.asyncio.client import connect as ws_connect
except ImportError:  # the self-test needs no network library
    websockets = None

# --- The documented limits (docs/protocol.md, APILimits) -------------------

MAX_MESSAGE_BYTES = 64 * 1024     # larger: close 1009
AUTH_SECONDS = 5                  # no auth frame by then: close 1008
BACKLOG_LIMIT = 1_000             # more missed: resync_required
TYPING_INTERVAL = 2.0             # one typing frame per conversation per 2 s is passed on
MAX_BODY = 4_000                  # code points
MAX_CLIENT_ID = 64
MAX_NESTING = 512                 # arrays and objects this deep: invalid JSON
INT64_MAX = 2**63 - 1

# How long an answer may take before it counts as a hang. The debug build on
# a busy 2-core machine is slow, but an answer never takes this long.
ANSWER_SECONDS = 15.0
CLOSE_SECONDS = 15.0

SERVER_TYPES = {"subscribed", "message", "message_updated", "ack", "read", "typing",
                "member_removed", "error", "resync_required", "pong",
                "inbox_subscribed", "conversation_activity", "member_added"}
LIVE_TYPES = {"message", "message_updated", "read", "typing", "member_removed", "resync_required"}
INBOX_TYPES = {"conversation_activity", "member_added"}   # and read, member_removed, resync_required with a cursor
CLIENT_TYPES = ["auth", "subscribe", "unsubscribe", "send", "read", "typing", "subscribe_inbox",
                "unsubscribe_inbox", "ping"]

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


# --- Tokens ------------------------------------------------------------------

def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(secret: str, claims: dict, alg: str = "HS256", sign_with: str | None = None) -> str:
    header = b64url(json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":")).encode())
    payload = b64url(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode()
    if alg == "none":
        return f"{header}.{payload}."
    key = (sign_with if sign_with is not None else secret).encode()
    signature = hmac.new(key, signing_input, hashlib.sha256).digest()
    return f"{header}.{payload}.{b64url(signature)}"


# --- Raw frames ----------------------------------------------------------------

def ws_frame(opcode: int, payload: bytes, rng: random.Random, fin: bool = True, rsv: int = 0,
             mask: bool = True) -> bytes:
    """A client frame exactly as given: what a WebSocket library will not send
    (invalid UTF-8 in a text frame, reserved bits, oversized control frames,
    unmasked frames) is written this way."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload)
    mask_bit = 0x80 if mask else 0
    if length < 126:
        header = bytes([first, mask_bit | length])
    elif length < 65536:
        header = bytes([first, mask_bit | 126]) + length.to_bytes(2, "big")
    else:
        header = bytes([first, mask_bit | 127]) + length.to_bytes(8, "big")
    if not mask:
        return header + payload
    key = rng.randbytes(4)
    if length == 0:
        return header + key
    repeated = (key * (length // 4 + 1))[:length]
    masked = (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(length, "big")
    return header + key + masked


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- Expectations --------------------------------------------------------------

ANY = object()

@dataclasses.dataclass
class Reply:
    """One answer frame the server must send, in order."""
    type: str
    code: str | tuple | None = None  # error: the code (or one of these codes)
    ref: object = ANY                # error: the exact ref, None for none, ANY for any
    conversation: str | None = None  # subscribed
    client_id: str | None = None     # ack
    body: str | None = None          # ack
    replayed: bool | None = None     # ack

    def describe(self) -> str:
        if self.type == "error":
            ref = "" if self.ref is ANY else f" ref={self.ref!r}"
            return f"error {self.code}{ref}"
        if self.type == "ack":
            return f"ack client_id={self.client_id!r} replayed={self.replayed}"
        if self.type == "subscribed":
            return f"subscribed {self.conversation}"
        return self.type

    def mismatch(self, frame: dict) -> str | None:
        """Why `frame` is not this reply, or None when it is."""
        if frame.get("type") != self.type:
            return f"expected {self.describe()}, got {summarize(frame)}"
        if self.type == "error":
            if frame.get("code") != self.code:
                return f"expected {self.describe()}, got error {frame.get('code')}"
            if self.ref is not ANY and frame.get("ref") != self.ref:
                return f"expected {self.describe()}, got ref {frame.get('ref')!r}"
            if not isinstance(frame.get("message"), str) or not frame["message"]:
                return "error frame without a message"
        if self.type == "subscribed":
            if frame.get("conversation_id") != self.conversation:
                return f"expected {self.describe()}, got {summarize(frame)}"
            if not isinstance(frame.get("last_seq"), int) or not isinstance(frame.get("version"), int):
                return f"subscribed without integer last_seq and version: {summarize(frame)}"
        if self.type == "ack":
            message = frame.get("message") or {}
            if frame.get("client_id") != self.client_id:
                return f"expected {self.describe()}, got ack client_id={frame.get('client_id')!r}"
            if frame.get("replayed") is not self.replayed:
                return f"expected {self.describe()}, got replayed={frame.get('replayed')}"
            if message.get("body") != self.body:
                return f"ack of client_id {self.client_id!r} carries another body"
        return None


@dataclasses.dataclass
class Step:
    """One fuzzed frame (or a few raw frames that make one message) and the
    answer docs/protocol.md promises for it."""
    category: str
    note: str
    writes: list                      # bytes to write, or ("ping", payload) for a control ping
    replies: list[Reply] = dataclasses.field(default_factory=list)
    close: int | None = None          # the socket must close with this code
    effect: object = None             # applied to the session when the answer matched
    pre_auth: bool = False            # sent before the socket is authenticated


def summarize(frame) -> str:
    if not isinstance(frame, dict):
        return repr(frame)[:120]
    kind = frame.get("type")
    if kind == "error":
        return f"error {frame.get('code')} ref={frame.get('ref')!r}"
    if kind in ("message", "message_updated"):
        message = frame.get("message") or {}
        return f"{kind} {message.get('conversation_id')} seq {message.get('seq')}"
    if kind == "ack":
        return f"ack {frame.get('client_id')!r} replayed={frame.get('replayed')}"
    if kind in ("subscribed", "resync_required"):
        return f"{kind} {frame.get('conversation_id')} last_seq {frame.get('last_seq')}"
    return str(kind)


class Violation(Exception):
    pass


# --- The shared fixture --------------------------------------------------------

class Fixture:
    """Users, conversations and tokens, set up over HTTP."""

    def __init__(self, url: str, secret: str, run_tag: str):
        self.url = url.rstrip("/")
        self.ws_url = self.url.replace("http://", "ws://", 1) + "/v1/stream"
        self.secret = secret
        self.users = {"a": f"fuzz-a-{run_tag}", "b": f"fuzz-b-{run_tag}", "c": f"fuzz-c-{run_tag}"}
        self.shared = ""      # A and B
        self.private = ""     # C only
        self.marker = f"carol-private-{run_tag}"
        self.initial_seq = 0  # messages every member can mark as read

    def token(self, who: str, ttl: float = 3600, **overrides) -> str:
        claims = {"sub": self.users.get(who, who), "exp": int(time.time() + ttl)}
        claims.update(overrides)
        return jwt(self.secret, claims)

    def http(self, method: str, path: str, who: str | None, body=None, timeout: float = 15):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if who:
            request.add_header("Authorization", f"Bearer {self.token(who)}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
                return response.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                return error.code, json.loads(raw)
            except ValueError:
                return error.code, raw

    def set_up(self):
        status, conversation = self.http("POST", "/v1/conversations", "a",
                                         {"title": "fuzz shared", "members": [self.users["b"]]})
        assert status in (200, 201), (status, conversation)
        self.shared = conversation["id"]
        status, conversation = self.http("POST", "/v1/conversations", "c", {"title": "fuzz private", "members": []})
        assert status in (200, 201), (status, conversation)
        self.private = conversation["id"]
        for n in range(5):
            status, _ = self.http("POST", f"/v1/conversations/{self.shared}/messages", "a" if n % 2 else "b",
                                  {"body": f"hello {n}", "client_id": f"setup-{n}"})
            assert status in (200, 201), status
            status, _ = self.http("POST", f"/v1/conversations/{self.private}/messages", "c",
                                  {"body": f"{self.marker} setup {n}", "client_id": f"setup-{n}"})
            assert status in (200, 201), status
        self.initial_seq = 5


# --- The oracle for frames received --------------------------------------------

class Subscription:
    """What a socket knows of one conversation it subscribed to: the next
    seq it must receive (None until the first one fixes it)."""

    def __init__(self, last_seq: int, after_seq: int | None):
        self.last_seq = last_seq
        self.after_seq = after_seq
        if after_seq is None or after_seq >= last_seq:
            # A client that claims to hold more than there is gets what comes next.
            self.next_seq = last_seq + 1 if after_seq is None or after_seq == last_seq else None
        else:
            self.next_seq = after_seq + 1
        self.resync_allowed = after_seq is not None and last_seq - after_seq > BACKLOG_LIMIT
        if self.resync_allowed:
            self.next_seq = None
        self.ending = False


class Checker:
    """Checks every frame a socket receives. Answers go to `replies`; live
    events are checked against the socket's subscriptions here."""

    def __init__(self, fixture: Fixture, user: str, stats: "Stats"):
        self.fixture = fixture
        self.user = user
        self.user_id = fixture.users[user]
        self.stats = stats
        self.replies: collections.deque = collections.deque()
        self.pending: dict[str, int | None] = {}   # subscribe sent, `subscribed` not yet seen: after_seq
        self.subscriptions: dict[str, Subscription] = {}
        self.problems: list[str] = []
        self.plant_leak = False
        self.inbox = False   # `inbox_subscribed` received (and no unsubscribe_inbox since)

    def leak(self, text: str, frame) -> str | None:
        """The private conversation's id or bodies in a frame for A or B."""
        if self.user == "c":
            return None
        secret_id = self.fixture.private.lower()
        lowered = text.lower()
        if self.fixture.marker.lower() not in lowered and secret_id not in lowered:
            return None
        if isinstance(frame, dict) and frame.get("type") == "error" and frame.get("ref") == secret_id:
            # The answer to a frame that named it: the id the client sent, echoed.
            rest = dict(frame)
            rest.pop("ref")
            if self.fixture.marker.lower() not in compact(rest).lower() and secret_id not in compact(rest).lower():
                return None
        return f"LEAK: a frame for {self.user_id} carries user C's private conversation: {text[:300]}"

    def receive(self, message) -> None:
        if isinstance(message, bytes):
            self.problems.append(f"a binary frame from the server: {message[:80]!r}")
            return
        try:
            frame = json.loads(message)
        except ValueError:
            self.problems.append(f"a text frame that is not JSON: {message[:120]!r}")
            return
        leak = self.leak(message, frame)
        if leak:
            self.problems.append(leak)
        if not isinstance(frame, dict) or frame.get("type") not in SERVER_TYPES:
            self.problems.append(f"an undocumented frame: {message[:160]}")
            return
        kind = frame["type"]
        self.stats.answers[kind] += 1
        if kind == "error":
            self.stats.answers[f"error {frame.get('code')}"] += 1
        if kind in INBOX_TYPES or (kind in LIVE_TYPES and "cursor" in frame):
            self.inbox_event(frame)
            return
        if kind == "inbox_subscribed":
            self.inbox = True
        if kind in LIVE_TYPES:
            self.live_event(frame)
            return
        if kind == "subscribed":
            conversation = frame.get("conversation_id")
            if conversation in self.pending:
                after = self.pending.pop(conversation)
                self.subscriptions[conversation] = Subscription(frame.get("last_seq", 0), after)
        self.replies.append(frame)

    def inbox_event(self, frame: dict) -> None:
        kind = frame["type"]
        if not self.inbox:
            self.problems.append(f"{summarize(frame)} of an inbox this socket did not subscribe to")
            return
        if not isinstance(frame.get("cursor"), str) or not frame["cursor"].isdigit():
            self.problems.append(f"{summarize(frame)} without a decimal cursor")
        if kind == "resync_required":
            return  # a cursor that is not one of this database's
        if kind == "member_added":
            # Resuming from a cursor before the user joined.
            conversation = (frame.get("conversation") or {}).get("id")
        else:
            conversation = frame.get("conversation_id")
        if conversation != self.fixture.shared:
            self.problems.append(f"inbox {kind} of {conversation}, which is not {self.user_id}'s conversation")
        if kind == "member_removed":
            self.problems.append(f"inbox member_removed for {conversation}: nobody was removed")
        if kind == "read" and frame.get("user_id") != self.user_id:
            self.problems.append(f"an inbox read of another user: {frame.get('user_id')}")

    def live_event(self, frame: dict) -> None:
        kind = frame["type"]
        if kind in ("message", "message_updated"):
            message = frame.get("message") or {}
            conversation = message.get("conversation_id")
        else:
            conversation = frame.get("conversation_id")
        subscription = self.subscriptions.get(conversation)
        if subscription is None:
            self.problems.append(f"{summarize(frame)} for a conversation this socket is not subscribed to")
            return
        if kind == "typing" and frame.get("user_id") == self.user_id:
            self.problems.append(f"a typing frame sent back to the typist {self.user_id}")
        if kind == "member_removed":
            self.problems.append(f"member_removed for {conversation}: nobody was removed")
        if kind == "resync_required":
            if not subscription.resync_allowed:
                self.problems.append(f"{summarize(frame)} though at most {BACKLOG_LIMIT} were missed")
            subscription.resync_allowed = False
            subscription.next_seq = frame.get("last_seq", 0) + 1
            return
        if kind != "message":
            return
        seq = message.get("seq")
        if message.get("sender") not in (self.fixture.users["a"], self.fixture.users["b"]):
            self.problems.append(f"a message from {message.get('sender')!r} in the shared conversation")
        if subscription.ending:
            return  # an unsubscribe is on its way; what was queued before it may still arrive
        if subscription.next_seq is None:
            subscription.next_seq = seq
            subscription.resync_allowed = False
        if seq != subscription.next_seq:
            self.problems.append(
                f"message seq {seq} of {conversation} where {subscription.next_seq} was due "
                f"(subscribed at last_seq {subscription.last_seq}, after_seq {subscription.after_seq})")
            subscription.next_seq = seq
        subscription.next_seq += 1
        subscription.resync_allowed = False


# --- Statistics ------------------------------------------------------------------

class Stats:
    def __init__(self):
        self.sent = collections.Counter()
        self.answers = collections.Counter()
        self.connections = collections.Counter()
        self.violations: list[dict] = []
        self.frames = 0


# --- The generator of steps ------------------------------------------------------

class Generator:
    """What to send next on one connection, and what must come back."""

    def __init__(self, fixture: Fixture, rng: random.Random, user: str, iteration: int):
        self.f = fixture
        self.rng = rng
        self.user = user
        self.iteration = iteration
        self.sends: dict[tuple[str, str], str] = {}   # (conversation, client_id) -> body
        self.counter = 0
        self.typing_at: dict[str, float] = {}

    # Conversations a frame may name: the shared one, C's, or nobody's.
    def conversation(self) -> tuple[str, str]:
        roll = self.rng.random()
        if roll < 0.55:
            return "shared", self.f.shared
        if roll < 0.8:
            return "private", self.f.private
        return "random", str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def spelled(self, conversation: str) -> str:
        """A UUID is read in any case; the server always answers in lowercase."""
        return conversation.upper() if self.rng.random() < 0.1 else conversation

    def client_id(self) -> str:
        self.counter += 1
        return f"fz{self.iteration}-{self.counter}"

    def body(self) -> str:
        roll = self.rng.random()
        if roll < 0.6:
            return f"fuzz {self.iteration} {self.rng.getrandbits(32):08x}"
        if roll < 0.75:
            return "".join(self.rng.choice("aé€😀 \u200bz") for _ in range(self.rng.randint(1, 40))) + "x"
        if roll < 0.85:
            return "😀" * MAX_BODY  # exactly the limit, in code points
        return "ünïcödé " * self.rng.randint(1, 30) + "🙂"

    def text(self, obj, step: Step) -> Step:
        step.writes.append(ws_frame(OP_TEXT, compact(obj).encode(), self.rng))
        return step

    # -- valid frames --------------------------------------------------------

    def valid(self) -> tuple[dict, Step]:
        kind = self.rng.choice(["ping", "subscribe", "subscribe", "unsubscribe", "send", "send", "send",
                                "read", "typing", "auth", "subscribe_inbox", "unsubscribe_inbox"])
        return getattr(self, f"valid_{kind}")()

    def valid_ping(self):
        return {"type": "ping"}, Step("valid ping", "ping", [], [Reply("pong")])

    def after_seq(self):
        roll = self.rng.random()
        if roll < 0.4:
            return None
        if roll < 0.7:
            return self.rng.randint(0, self.f.initial_seq)
        if roll < 0.8:
            return 0
        return self.rng.choice([INT64_MAX, 10**12])

    def valid_subscribe(self):
        which, conversation = self.conversation()
        after = self.after_seq()
        frame = {"type": "subscribe", "conversation_id": self.spelled(conversation)}
        if after is not None:
            frame["after_seq"] = after
        if which == "shared":
            step = Step(f"subscribe {which}", f"subscribe shared after {after}", [],
                        [Reply("subscribed", conversation=conversation)], effect=("subscribe", conversation, after))
        else:
            step = Step(f"subscribe {which}", f"subscribe {which} after {after}", [],
                        [Reply("error", "conversation_not_found", ref=conversation)])
        return frame, step

    def valid_subscribe_inbox(self):
        roll = self.rng.random()
        if roll < 0.4:
            after = None
        elif roll < 0.8:
            after = str(self.rng.choice([0, 1, self.rng.getrandbits(20), 2**64 - 1]))
        else:
            after = self.rng.choice(["", "-1", "12a", "1e3", " 7", "9" * 21])
        frame = {"type": "subscribe_inbox"}
        if after is not None:
            frame["after"] = after
        if after is None or after.isdigit() and len(after) <= 20 and int(after) < 2**64:
            return frame, Step("subscribe_inbox", f"subscribe_inbox after {after!r}", [],
                               [Reply("inbox_subscribed")], effect=("inbox",))
        return frame, Step("subscribe_inbox bad", f"subscribe_inbox after {after!r}", [],
                           [Reply("error", "invalid_field", ref=None)])

    def valid_unsubscribe_inbox(self):
        return {"type": "unsubscribe_inbox"}, Step("unsubscribe_inbox", "unsubscribe_inbox", [], [],
                                                   effect=("uninbox",))

    def valid_unsubscribe(self):
        which, conversation = self.conversation()
        frame = {"type": "unsubscribe", "conversation_id": self.spelled(conversation)}
        return frame, Step(f"unsubscribe {which}", f"unsubscribe {which}", [], [],
                           effect=("unsubscribe", conversation))

    def valid_send(self):
        which, conversation = self.conversation()
        roll = self.rng.random()
        previous = [key for key in self.sends if key[0] == conversation]
        if previous and roll < 0.15:
            # The same client_id again: the same body is a replay, another a conflict.
            _, client_id = self.rng.choice(previous)
            body = self.sends[(conversation, client_id)]
            if self.rng.random() < 0.5:
                frame = {"type": "send", "conversation_id": conversation, "body": body, "client_id": client_id}
                return frame, Step("send replay", "send again", [], [Reply("ack", client_id=client_id, body=body,
                                                                           replayed=True)])
            frame = {"type": "send", "conversation_id": conversation, "body": f"changed {self.rng.getrandbits(32)}",
                     "client_id": client_id}
            return frame, Step("send conflict", "send another body", [],
                               [Reply("error", "idempotency_conflict", ref=client_id)])
        client_id = self.client_id()
        body = self.body()
        frame = {"type": "send", "conversation_id": self.spelled(conversation), "body": body, "client_id": client_id}
        if which == "shared":
            return frame, Step("send shared", f"send {len(body)} code points", [],
                               [Reply("ack", client_id=client_id, body=body, replayed=False)],
                               effect=("sent", conversation, client_id, body))
        return frame, Step(f"send {which}", f"send to {which}", [],
                           [Reply("error", "conversation_not_found", ref=client_id)])

    def valid_read(self):
        which, conversation = self.conversation()
        roll = self.rng.random()
        if roll < 0.6:
            seq = self.rng.randint(0, self.f.initial_seq)
        elif roll < 0.8:
            seq = self.rng.choice([10**12, INT64_MAX])
        else:
            seq = self.rng.choice([-1, -(2**63)])
        frame = {"type": "read", "conversation_id": self.spelled(conversation), "seq": seq}
        if seq < 0:
            replies = [Reply("error", "invalid_read_seq", ref=conversation)]
        elif which != "shared":
            replies = [Reply("error", "conversation_not_found", ref=conversation)]
        elif seq > self.f.initial_seq:
            replies = [Reply("error", "invalid_read_seq", ref=conversation)]
        else:
            replies = []
        return frame, Step(f"read {which}", f"read {which} seq {seq}", [], replies)

    def valid_typing(self):
        which, conversation = self.conversation()
        frame = {"type": "typing", "conversation_id": self.spelled(conversation)}
        # Whether the server passes it on depends on the time since the last
        # one it took for this conversation: decided when it is sent.
        step = Step(f"typing {which}", f"typing {which}", [], [], effect=("typing", conversation, which))
        return frame, step

    def valid_auth(self):
        roll = self.rng.random()
        if roll < 0.5:
            token = self.f.token(self.user, ttl=self.rng.randint(60, 7200))
            return {"type": "auth", "token": token}, Step("auth refresh", "auth with a fresh token", [], [])
        other = "b" if self.user == "a" else "a"
        token = self.f.token(other)
        return {"type": "auth", "token": token}, Step("auth other user", "auth as another user", [],
                                                       [Reply("error", "forbidden", ref=None)])

    def bad_token(self) -> tuple[str, str]:
        """A token the server must refuse, and what is wrong with it."""
        now = int(time.time())
        user = self.f.users[self.user]
        choices = [
            ("expired", jwt(self.f.secret, {"sub": user, "exp": now - self.rng.randint(1, 10**6)})),
            ("wrong signature", jwt(self.f.secret, {"sub": user, "exp": now + 600}, sign_with="x" * 40)),
            ("alg none", jwt(self.f.secret, {"sub": user, "exp": now + 600}, alg="none")),
            ("alg HS512 name", jwt(self.f.secret, {"sub": user, "exp": now + 600}, alg="HS512")),
            ("no exp", jwt(self.f.secret, {"sub": user})),
            ("no sub", jwt(self.f.secret, {"exp": now + 600})),
            ("bad sub", jwt(self.f.secret, {"sub": self.rng.choice(["not/a user", "tab\there", " padded", "(erased)", "\u202eevil"]), "exp": now + 600})),
            ("long sub", jwt(self.f.secret, {"sub": "u" * 256, "exp": now + 600})),
            ("exp as string", jwt(self.f.secret, {"sub": user, "exp": "tomorrow"})),
            ("garbage", "".join(self.rng.choice("abc.-_=+/ ") for _ in range(self.rng.randint(0, 200)))),
            ("huge", "a." * self.rng.randint(1000, 20000)),
            ("empty", ""),
        ]
        name, token = self.rng.choice(choices)
        return name, token

    # -- fuzzed frames after authentication -----------------------------------

    def next_step(self) -> Step:
        category = self.rng.choices(
            ["valid", "truncated", "wrong type", "missing field", "huge number", "deep nesting", "unknown type",
             "not an object", "extra fields", "binary", "fragmented", "control ping", "bad auth",
             "invalid utf-8", "oversized", "body limits", "client_id limits", "unicode escapes", "whitespace",
             "exact size"],
            weights=[30, 5, 6, 4, 5, 3, 4, 2, 3, 3, 6, 4, 1, 1, 1, 3, 2, 2, 1, 1])[0]
        return getattr(self, "fuzz_" + category.replace(" ", "_").replace("-", "_"))()

    def with_frame(self, frame: dict, step: Step) -> Step:
        return self.text(frame, step)

    def fuzz_valid(self) -> Step:
        frame, step = self.valid()
        step.category = "valid " + step.category.removeprefix("valid ")
        return self.with_frame(frame, step)

    def fuzz_truncated(self) -> Step:
        frame, _ = self.valid()
        text = compact(frame).encode()
        cut = self.rng.randint(0, len(text) - 1)
        piece = text[:cut]
        # Cutting inside a multi-byte character leaves invalid UTF-8: 1007.
        try:
            piece.decode()
        except UnicodeDecodeError:
            piece = text[:cut - 1]
            with contextlib.suppress(UnicodeDecodeError):
                piece.decode()
        while True:
            try:
                piece.decode()
                break
            except UnicodeDecodeError:
                piece = piece[:-1]
        step = Step("truncated JSON", f"{len(piece)} of {len(text)} bytes", [ws_frame(OP_TEXT, piece, self.rng)],
                    [Reply("error", "invalid_json", ref=None)])
        return step

    def fuzz_wrong_type(self) -> Step:
        frame, step = self.valid()
        keys = [key for key in frame]
        key = self.rng.choice(keys)
        value = frame[key]
        candidates = [None, True, 0, -1, 1.5, "text", [], {}, [value], {"v": value}]
        if isinstance(value, int) and not isinstance(value, bool):
            candidates = [c for c in candidates if not (isinstance(c, int) and not isinstance(c, bool))]
            candidates.append(str(value))
        if isinstance(value, str):
            candidates = [c for c in candidates if not isinstance(c, str)]
        wrong = self.rng.choice(candidates)
        frame = dict(frame)
        frame[key] = wrong
        if key == "after_seq" and wrong is None:
            # null is how an optional field is left out
            step.category = "wrong type"
            step.note = "after_seq null"
            if step.effect:
                step.effect = step.effect[:2] + (None,)
            return self.with_frame(frame, step)
        if key == "after" and wrong is None:
            return self.with_frame(frame, self.inbox_from_now("wrong type", "subscribe_inbox after null"))
        if key == "body" and wrong is None and frame.get("type") == "send":
            return self.with_frame(frame, self.send_without_body("wrong type", "send body null", frame))
        # A number that is not whole does not fit an integer field: the frame
        # is invalid JSON as a whole, like any number out of range.
        code = "invalid_json" if isinstance(wrong, float) and isinstance(value, int) else "invalid_field"
        return self.with_frame(frame, Step("wrong type", f"{frame.get('type')!r}: {key} = {compact(wrong)}", [],
                                           [Reply("error", code, ref=None)]))

    @staticmethod
    def send_without_body(category: str, note: str, frame: dict) -> Step:
        """`body` is optional (null is how it is left out) for a message
        with attachments; one without is a body with nothing visible."""
        return Step(category, note, [], [Reply("error", "invalid_message_body", ref=frame.get("client_id"))])

    @staticmethod
    def inbox_from_now(category: str, note: str) -> Step:
        """`after` is optional: without it the inbox is live from now on."""
        return Step(category, note, [], [Reply("inbox_subscribed")], effect=("inbox",))

    def fuzz_missing_field(self) -> Step:
        frame, step = self.valid()
        key = self.rng.choice(list(frame))
        frame = dict(frame)
        del frame[key]
        if key == "after_seq":
            step.category, step.note = "missing field", "without after_seq"
            if step.effect:
                step.effect = step.effect[:2] + (None,)
            return self.with_frame(frame, step)
        if key == "after":
            return self.with_frame(frame, self.inbox_from_now("missing field", "subscribe_inbox without after"))
        if key == "body" and frame.get("type") == "send":
            return self.with_frame(frame, self.send_without_body("missing field", "send without body", frame))
        if key == "type":
            return self.with_frame(frame, Step("missing field", "without type", [],
                                               [Reply("error", "invalid_field", ref=None)]))
        return self.with_frame(frame, Step("missing field", f"{frame['type']} without {key}", [],
                                           [Reply("error", "invalid_field", ref=None)]))

    def fuzz_huge_number(self) -> Step:
        """Numbers that do not fit a 64-bit integer field, or are not whole."""
        field = self.rng.choice(["after_seq", "seq"])
        conversation = self.f.shared
        literal = self.rng.choice([
            str(2**63), str(-(2**63) - 1), "1" + "0" * self.rng.randint(20, 400), "-" + "9" * 40,
            "1e400", "-1e400", "1.5", "0.1", "1e-7", "123456789012345678901234567890.5", "1E+30",
        ])
        kind = "subscribe" if field == "after_seq" else "read"
        text = f'{{"type":"{kind}","conversation_id":"{conversation}","{field}":{literal}}}'
        # A number that does not fit its field makes the frame invalid JSON as
        # a whole (APIErrorCode.invalidJSON), as over HTTP.
        return Step("huge number", f"{field} {literal[:40]}", [ws_frame(OP_TEXT, text.encode(), self.rng)],
                    [Reply("error", "invalid_json", ref=None)])

    def fuzz_deep_nesting(self) -> Step:
        depth = self.rng.choice([self.rng.randint(1, MAX_NESTING - 1), self.rng.randint(MAX_NESTING, 30000),
                                 MAX_NESTING - 1, MAX_NESTING])
        opener, closer = self.rng.choice([("[", "]"), ('{"a":', "}")])
        nested = opener * depth + "1" + closer * depth
        where = self.rng.choice(["extra", "type"])
        if where == "extra":
            text = '{"type":"ping","extra":' + nested + "}"
        else:
            text = '{"type":' + nested + "}"
        if len(text.encode()) > MAX_MESSAGE_BYTES:
            depth = (MAX_MESSAGE_BYTES - 40) // (len(opener) + len(closer))
            nested = opener * depth + "1" + closer * depth
            text = ('{"type":"ping","extra":' + nested + "}") if where == "extra" else ('{"type":' + nested + "}")
        if depth >= MAX_NESTING:
            replies = [Reply("error", "invalid_json", ref=None)]
        elif where == "type":
            replies = [Reply("error", "invalid_field", ref=None)]
        else:
            replies = [Reply("pong")]
        return Step("deep nesting", f"depth {depth} in {where}", [ws_frame(OP_TEXT, text.encode(), self.rng)],
                    replies)

    def fuzz_unknown_type(self) -> Step:
        name = self.rng.choice([
            "", "PING", "Ping", "ping ", " auth", "pong", "subscribed", "message", "error", "hello",
            "sub\u0000scribe", "😀", "x" * self.rng.randint(100, 20000), "type", "null",
        ])
        frame = {"type": name, "conversation_id": self.f.shared}
        return self.with_frame(frame, Step("unknown type", f"type {name[:20]!r}", [],
                                           [Reply("error", "unknown_frame_type", ref=None)]))

    def fuzz_not_an_object(self) -> Step:
        text = self.rng.choice(["[]", "42", '"ping"', "null", "true", '[{"type":"ping"}]', "-0", "1e5"])
        return Step("not an object", text, [ws_frame(OP_TEXT, text.encode(), self.rng)],
                    [Reply("error", "invalid_json", ref=None)])

    def fuzz_extra_fields(self) -> Step:
        frame, step = self.valid()
        frame = dict(frame)
        for _ in range(self.rng.randint(1, 5)):
            frame[self.rng.choice(["x", "user_id", "sender", "seq2", "members", "conversation", "__proto__"])] = \
                self.rng.choice([1, "two", None, [3], {"four": 4}, self.f.users["c"]])
        step.category = "extra fields"
        return self.with_frame(frame, step)

    def fuzz_binary(self) -> Step:
        roll = self.rng.random()
        if roll < 0.5:
            frame, _ = self.valid()
            payload = compact(frame).encode()
        else:
            payload = self.rng.randbytes(self.rng.randint(0, 2000))
        return Step("binary", f"{len(payload)} bytes", [ws_frame(OP_BINARY, payload, self.rng)],
                    [Reply("error", "invalid_json", ref=None)])

    def fuzz_fragmented(self, pre_auth: bool = False) -> Step:
        """A message in 2 to 12 fragments, sometimes with pings between
        them, sometimes cut inside a multi-byte character: the answer is
        the one to the whole message."""
        frame, step = self.valid()
        if pre_auth and frame["type"] == "auth":
            # Any valid token authenticates a socket that has none yet.
            frame, step = self.valid_ping()
        payload = compact(frame).encode()
        pieces = self.rng.randint(2, 12)
        cuts = sorted(self.rng.sample(range(1, len(payload)), min(pieces - 1, len(payload) - 1)))
        parts = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])]
        writes = []
        for index, part in enumerate(parts):
            opcode = OP_TEXT if index == 0 else OP_CONT
            writes.append(ws_frame(opcode, part, self.rng, fin=index == len(parts) - 1))
            if index < len(parts) - 1 and self.rng.random() < 0.2:
                writes.append(("ping", self.rng.randbytes(self.rng.randint(0, 125))))
        step.writes = writes
        step.category = "fragmented"
        step.note = f"{len(parts)} fragments: {step.note}"
        return step

    def fuzz_control_ping(self) -> Step:
        payload = self.rng.randbytes(self.rng.randint(0, 125))
        step = Step("control ping", f"ping with {len(payload)} bytes", [("ping", payload)])
        if self.rng.random() < 0.3:
            step.writes.append(ws_frame(OP_PONG, self.rng.randbytes(self.rng.randint(0, 125)), self.rng))
            step.note += " and an unsolicited pong"
        return step

    def fuzz_bad_auth(self) -> Step:
        name, token = self.bad_token()
        frame = {"type": "auth", "token": token}
        return self.with_frame(frame, Step("bad auth", f"auth: {name}", [], [Reply("error", "unauthorized", ref=None)],
                                           close=4401))

    def fuzz_invalid_utf_8(self) -> Step:
        return self.invalid_utf8_step()

    def invalid_utf8_step(self) -> Step:
        bad = self.rng.choice([b"\xff", b"\xc3\x28", b"\xe2\x82", b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf",
                               b"\xf8\x88\x80\x80\x80", b"\x80"])
        payload = b'{"type":"send","body":"' + bad + b'"}'
        if self.rng.random() < 0.5:
            # Split so that the invalid bytes sit in a continuation frame.
            writes = [ws_frame(OP_TEXT, payload[:10], self.rng, fin=False),
                      ws_frame(OP_CONT, payload[10:], self.rng)]
            note = f"{bad!r} in a continuation"
        else:
            writes = [ws_frame(OP_TEXT, payload, self.rng)]
            note = f"{bad!r}"
        return Step("invalid utf-8", note, writes, close=1007)

    def fuzz_oversized(self) -> Step:
        return self.oversized_step()

    def oversized_step(self) -> Step:
        size = self.rng.choice([MAX_MESSAGE_BYTES + 1, MAX_MESSAGE_BYTES + self.rng.randint(2, 200_000)])
        payload = ('{"type":"ping","pad":"' + "p" * size + '"}').encode()[:size]
        if self.rng.random() < 0.5:
            return Step("oversized", f"one frame of {size} bytes", [ws_frame(OP_TEXT, payload, self.rng)], close=1009)
        chunk = self.rng.choice([1000, 8000, 30000])
        parts = [payload[i:i + chunk] for i in range(0, len(payload), chunk)]
        writes = [ws_frame(OP_TEXT if i == 0 else OP_CONT, part, self.rng, fin=i == len(parts) - 1)
                  for i, part in enumerate(parts)]
        return Step("oversized", f"{size} bytes in {len(parts)} fragments", writes, close=1009)

    def fuzz_exact_size(self) -> Step:
        """A message of exactly the limit is taken (and answered)."""
        prefix, suffix = '{"type":"ping","pad":"', '"}'
        pad = MAX_MESSAGE_BYTES - len(prefix) - len(suffix)
        payload = (prefix + "p" * pad + suffix).encode()
        assert len(payload) == MAX_MESSAGE_BYTES
        if self.rng.random() < 0.5:
            writes = [ws_frame(OP_TEXT, payload, self.rng)]
        else:
            half = len(payload) // 2
            writes = [ws_frame(OP_TEXT, payload[:half], self.rng, fin=False),
                      ws_frame(OP_CONT, payload[half:], self.rng)]
        return Step("exact size", f"{len(payload)} bytes in {len(writes)} frames", writes, [Reply("pong")])

    def fuzz_body_limits(self) -> Step:
        which, conversation = self.conversation()
        client_id = self.client_id()
        body = self.rng.choice([
            "", " ", "\n\t ", "\u200b\u200d", "a\u0000b", "😀" * (MAX_BODY + 1), "x" * (MAX_BODY + self.rng.randint(1, 9000)),
        ])
        frame = {"type": "send", "conversation_id": conversation, "body": body, "client_id": client_id}
        return self.with_frame(frame, Step("body limits", f"send a body of {len(body)} code points to {which}", [],
                                           [Reply("error", "invalid_message_body", ref=client_id)]))

    def fuzz_client_id_limits(self) -> Step:
        which, conversation = self.conversation()
        client_id = self.rng.choice(["", "c" * (MAX_CLIENT_ID + 1), "tab\there", "nl\n", "\u0007", "é" * 65])
        body = f"fuzz {self.iteration} bad client id"
        frame = {"type": "send", "conversation_id": conversation, "body": body, "client_id": client_id}
        return self.with_frame(frame, Step("client_id limits", f"client_id of {len(client_id)} to {which}", [],
                                           [Reply("error", "invalid_client_id", ref=client_id)]))

    def fuzz_unicode_escapes(self) -> Step:
        """Escapes in JSON strings: a NUL is refused as a body, a lone
        surrogate is not a character (invalid JSON)."""
        client_id = self.client_id()
        escape = self.rng.choice(["\\u0000", "\\ud800", "\\udc00", "a\\ud83dz"])
        text = (f'{{"type":"send","conversation_id":"{self.f.shared}","body":"x{escape}y",'
                f'"client_id":"{client_id}"}}')
        if escape == "\\u0000":
            replies = [Reply("error", "invalid_message_body", ref=client_id)]
        else:
            replies = [Reply("error", "invalid_json", ref=None)]
        return Step("unicode escapes", f"body with {escape}", [ws_frame(OP_TEXT, text.encode(), self.rng)], replies)

    def fuzz_whitespace(self) -> Step:
        frame, step = self.valid()
        text = self.rng.choice([" ", "\n", "\t\r\n "]) + compact(frame) + self.rng.choice([" ", "\n", ""])
        step.category, step.note = "whitespace", "JSON with whitespace around it"
        step.writes = [ws_frame(OP_TEXT, text.encode(), self.rng)]
        return step

    # -- frames before authentication -----------------------------------------

    def pre_auth_step(self) -> Step:
        roll = self.rng.random()
        if roll < 0.35:
            frame, _ = self.valid()
            if frame["type"] == "auth":
                frame = {"type": "ping"}
            return self.text(frame, Step("before auth", f"{frame['type']} before auth", [], close=1008, pre_auth=True))
        if roll < 0.45:
            step = self.fuzz_truncated()
        elif roll < 0.55:
            step = self.fuzz_binary()
        elif roll < 0.62:
            step = self.fuzz_unknown_type()
        elif roll < 0.72:
            step = self.fuzz_bad_auth()
            step.category, step.pre_auth = "bad auth first", True
            return step
        elif roll < 0.78:
            frame = {"type": "auth"}
            step = self.text(frame, Step("", "auth without token", []))
        elif roll < 0.84:
            step = self.invalid_utf8_step()
            step.category, step.pre_auth = "invalid utf-8 before auth", True
            return step
        elif roll < 0.9:
            step = self.oversized_step()
            step.category, step.pre_auth = "oversized before auth", True
            return step
        else:
            step = self.fuzz_fragmented(pre_auth=True)
        step.category = "before auth: " + (step.category or "malformed")
        step.replies, step.close, step.pre_auth, step.effect = [], 1008, True, None
        return step


# --- One connection ---------------------------------------------------------------

class Connection:
    def __init__(self, runner: "Runner", iteration: int):
        self.runner = runner
        self.f = runner.fixture
        self.iteration = iteration
        self.rng = random.Random(f"{runner.seed}:{iteration}")
        self.user = self.rng.choice(["a", "b"])
        self.gen = Generator(self.f, self.rng, self.user, iteration)
        self.checker = Checker(self.f, self.user, runner.stats)
        self.ws = None
        self.reader = None
        self.closed = asyncio.Event()
        self.log: list[str] = []
        self.step_index = 0

    def violation(self, detail: str, step: Step | None = None):
        self.runner.stats.violations.append({
            "iteration": self.iteration, "step": self.step_index, "user": self.user,
            "category": step.category if step else "", "note": step.note if step else "",
            "detail": detail, "log": self.log[-8:]})
        raise Violation(detail)

    async def open(self, headers=None):
        self.ws = await asyncio.wait_for(
            ws_connect(self.f.ws_url, additional_headers=headers, compression=None, ping_interval=None,
                       close_timeout=5, open_timeout=ANSWER_SECONDS, max_size=2**22, proxy=None,
                       user_agent_header=None),
            ANSWER_SECONDS)
        self.reader = asyncio.create_task(self.read())

    async def read(self):
        try:
            async for message in self.ws:
                self.checker.receive(message)
                if self.runner.plant == "leak" and not self.checker.plant_leak and self.user != "c":
                    # A deliberately wrong server: C's body on A's or B's socket.
                    self.checker.plant_leak = True
                    self.checker.receive(compact({"type": "typing", "conversation_id": self.f.private,
                                                  "user_id": self.f.users["c"]}))
        except websockets.exceptions.ConnectionClosed:
            pass
        except Exception as error:  # noqa: BLE001 - reported as a violation
            self.checker.problems.append(f"reading the socket failed: {error!r}")
        finally:
            self.closed.set()

    def close_code(self) -> int:
        received = self.ws.protocol.close_rcvd
        return received.code if received is not None else 1006

    def check_problems(self, step: Step | None):
        if self.checker.problems:
            problems = self.checker.problems[:]
            self.checker.problems.clear()
            self.violation("; ".join(problems), step)

    async def write(self, step: Step):
        """Writes the step's frames; control pings (possibly between the
        fragments of a message) must each get their pong, with its payload."""
        waiters = []
        for item in step.writes:
            if self.ws.transport.is_closing():
                break
            if isinstance(item, tuple):
                waiters.append((len(item[1]), await self.ws.ping(item[1])))
            else:
                self.ws.transport.write(item)
            self.runner.stats.frames += 1
        self.runner.stats.sent[step.category] += 1
        for size, waiter in waiters:
            try:
                await asyncio.wait_for(asyncio.shield(waiter), ANSWER_SECONDS)
                self.runner.stats.answers["control pong"] += 1
            except asyncio.TimeoutError:
                self.violation(f"no pong to a ping of {size} bytes within {ANSWER_SECONDS:.0f} s", step)
            except websockets.exceptions.ConnectionClosed:
                self.violation(f"the socket closed ({self.close_code()}) instead of answering a ping", step)

    async def next_reply(self, step: Step, deadline: float):
        while not self.checker.replies:
            self.check_problems(step)
            if self.closed.is_set():
                return None
            left = deadline - time.monotonic()
            if left <= 0:
                self.violation(f"no answer within {ANSWER_SECONDS:.0f} s (a hang)", step)
            waiter = asyncio.create_task(self.closed.wait())
            await asyncio.wait([waiter], timeout=min(left, 0.05))
            waiter.cancel()
        return self.checker.replies.popleft()

    async def run_step(self, step: Step):
        self.step_index += 1
        self.log.append(f"#{self.step_index} {step.category}: {step.note}")
        if step.effect and step.effect[0] == "typing":
            await self.prepare_typing(step)
        if step.effect and step.effect[0] == "subscribe":
            self.checker.pending[step.effect[1]] = step.effect[2]
        if step.effect and step.effect[0] == "unsubscribe":
            subscription = self.checker.subscriptions.get(step.effect[1])
            if subscription:
                subscription.ending = True
            self.checker.pending.pop(step.effect[1], None)
        await self.write(step)
        deadline = time.monotonic() + (CLOSE_SECONDS if step.close else ANSWER_SECONDS)
        if step.close is not None:
            got = []
            while True:
                frame = await self.next_reply(step, deadline)
                if frame is None:
                    break
                got.append(frame)
            self.check_problems(step)
            code = self.close_code()
            self.runner.stats.answers[f"close {code}"] += 1
            if code != step.close:
                self.violation(f"closed with {code} where {step.close} was due (frames before: "
                               f"{[summarize(g) for g in got]})", step)
            self.compare(step, got)
            return False
        # The barrier: everything the frame caused comes before this pong.
        self.ws.transport.write(ws_frame(OP_TEXT, b'{"type":"ping"}', self.rng))
        pongs_due = sum(1 for reply in step.replies if reply.type == "pong") + 1
        got = []
        while pongs_due:
            frame = await self.next_reply(step, deadline)
            if frame is None:
                code = self.close_code()
                self.runner.stats.answers[f"close {code}"] += 1
                self.violation(f"the socket closed with {code} where {[r.describe() for r in step.replies]} "
                               f"was due (frames before: {[summarize(g) for g in got]})", step)
            got.append(frame)
            if frame.get("type") == "pong":
                pongs_due -= 1
        self.compare(step, got[:-1])
        self.check_problems(step)
        self.apply(step)
        return True

    def compare(self, step: Step, got: list):
        expected = step.replies
        if len(got) != len(expected):
            self.violation(f"expected {[r.describe() for r in expected]}, got {[summarize(g) for g in got]}", step)
        for reply, frame in zip(expected, got):
            if isinstance(reply.code, tuple):
                if frame.get("type") == "error" and frame.get("code") in reply.code:
                    reply = dataclasses.replace(reply, code=frame.get("code"))
            problem = reply.mismatch(frame)
            if problem:
                self.violation(problem, step)

    def apply(self, step: Step):
        if not step.effect:
            return
        if step.effect[0] == "uninbox":
            # Every inbox frame queued before the unsubscribe came before the barrier's pong.
            self.checker.inbox = False
        if step.effect[0] == "unsubscribe":
            self.checker.subscriptions.pop(step.effect[1], None)
        if step.effect[0] == "sent":
            _, conversation, client_id, body = step.effect
            self.gen.sends[(conversation, client_id)] = body
        if step.effect[0] == "subscribe":
            if step.effect[1] not in self.checker.subscriptions:
                self.violation("subscribed, but no subscription was recorded", step)

    async def prepare_typing(self, step: Step):
        """Decides whether a typing frame passes the 2 s limit, waiting out
        the moments when it could go either way."""
        _, conversation, which = step.effect
        if which != "shared":
            # Not a member: refused every time, and a refused notice does
            # not start an interval (only notices that go out are paced).
            step.replies = [Reply("error", "conversation_not_found", ref=conversation)]
            return
        last = self.gen.typing_at.get(conversation)
        now = time.monotonic()
        if last is not None and TYPING_INTERVAL - 0.5 < now - last < TYPING_INTERVAL + 0.5:
            await asyncio.sleep(TYPING_INTERVAL + 0.5 - (now - last))
            now = time.monotonic()
        if last is not None and now - last < TYPING_INTERVAL:
            step.replies = []
            step.note += " (within 2 s: dropped)"
            return
        self.gen.typing_at[conversation] = now
        step.replies = []

    async def end(self):
        mode = self.rng.choice(["close", "close", "abort", "partial"])
        try:
            if mode == "close" and not self.closed.is_set():
                await asyncio.wait_for(self.ws.close(), CLOSE_SECONDS)
            elif mode == "partial" and not self.ws.transport.is_closing():
                frame = ws_frame(OP_TEXT, b'{"type":"ping"}' * 20, self.rng)
                self.ws.transport.write(frame[:self.rng.randint(1, len(frame) - 1)])
                self.ws.transport.abort()
            else:
                self.ws.transport.abort()
        except Exception:  # noqa: BLE001 - the connection is over either way
            self.ws.transport.abort()
        if self.reader:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.reader, CLOSE_SECONDS)
        self.runner.stats.connections[f"ended by {mode}"] += 1

    async def run(self):
        kind = self.rng.choices(["session", "pre-auth", "header", "silent", "expiry", "protocol"],
                                weights=[74, 12, 6, 1, 3, 4])[0]
        self.runner.stats.connections[kind] += 1
        try:
            if kind == "header":
                if self.rng.random() < 0.3:
                    name, token = self.gen.bad_token()
                    await self.open({"Authorization": f"Bearer {token}"})
                    step = Step("bad header token", f"header: {name}", [], [Reply("error", "unauthorized", ref=None)],
                                close=4401)
                    await self.run_step(step)
                    return
                await self.open({"Authorization": f"Bearer {self.f.token(self.user)}"})
                await self.session()
            elif kind == "silent":
                await self.open()
                step = Step("silent", "nothing sent", [], close=1008)
                started = time.monotonic()
                await self.run_step(step)
                waited = time.monotonic() - started
                if waited < AUTH_SECONDS - 0.5:
                    self.violation(f"closed after {waited:.1f} s, before the {AUTH_SECONDS} s to authenticate")
            elif kind == "pre-auth":
                await self.open()
                await self.run_step(self.gen.pre_auth_step())
            elif kind == "expiry":
                await self.open()
                await self.auth(ttl=2.5)
                if self.rng.random() < 0.5:
                    await self.run_step(self.gen.text({"type": "auth", "token": self.f.token(self.user)},
                                                      Step("auth refresh", "before expiry", [])))
                    await asyncio.sleep(4)
                    await self.run_step(self.gen.text({"type": "ping"}, Step("after refresh", "still open",
                                                                             [], [Reply("pong")])))
                else:
                    step = Step("token expiry", "wait for the token to expire", [],
                                [Reply("error", "unauthorized", ref=None)], close=4401)
                    await self.run_step(step)
                    return
            elif kind == "protocol":
                await self.open()
                await self.auth()
                for _ in range(self.rng.randint(0, 3)):
                    if not await self.run_step(self.gen.next_step()):
                        return
                step = self.protocol_violation()
                if await self.run_step(step):
                    await self.session()
                return
            else:
                await self.open()
                await self.auth()
                await self.session()
        except Violation:
            pass
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as error:
            self.runner.stats.violations.append({
                "iteration": self.iteration, "step": self.step_index, "user": self.user, "category": kind,
                "note": "", "detail": f"connection failed: {error!r}", "log": self.log[-8:]})
        except Exception as error:  # noqa: BLE001 - a bug of the fuzzer fails the run too
            self.runner.stats.violations.append({
                "iteration": self.iteration, "step": self.step_index, "user": self.user, "category": kind,
                "note": "", "detail": f"the fuzzer failed: {error!r}", "log": self.log[-8:]})
        finally:
            if self.ws is not None:
                await self.end()

    async def auth(self, ttl: float = 3600):
        token = self.f.token(self.user, ttl=ttl)
        step = self.gen.text({"type": "auth", "token": token}, Step("auth", "first frame", [], pre_auth=True))
        await self.run_step(step)

    async def session(self):
        for _ in range(self.rng.randint(1, 30)):
            if not await self.run_step(self.gen.next_step()):
                return

    def protocol_violation(self) -> Step:
        """Frames RFC 6455 forbids: the connection fails (close 1002)."""
        rng = self.rng
        choice = rng.choice(["long ping", "rsv bits", "reserved opcode", "lone continuation", "text in fragments",
                             "fragmented ping", "unmasked", "close 1005", "bad close code"])
        if choice == "long ping":
            writes = [ws_frame(OP_PING, rng.randbytes(rng.randint(126, 1000)), rng)]
        elif choice == "rsv bits":
            writes = [ws_frame(OP_TEXT, b'{"type":"ping"}', rng, rsv=rng.choice([1, 2, 4, 7]))]
        elif choice == "reserved opcode":
            writes = [ws_frame(rng.choice([3, 4, 5, 6, 7, 0xB, 0xF]), b"x", rng)]
        elif choice == "lone continuation":
            writes = [ws_frame(OP_CONT, b'{"type":"ping"}', rng)]
        elif choice == "text in fragments":
            writes = [ws_frame(OP_TEXT, b'{"type":', rng, fin=False), ws_frame(OP_TEXT, b'"ping"}', rng)]
        elif choice == "fragmented ping":
            writes = [ws_frame(OP_PING, b"ab", rng, fin=False)]
        elif choice == "unmasked":
            # RFC 6455 wants a server to fail these; swift-nio's decoder takes
            # them as they are (see docs/protocol.md), so they are answered.
            step = Step("unmasked frame", "a ping frame without a mask", [], [Reply("pong")])
            step.writes = [ws_frame(OP_TEXT, b'{"type":"ping"}', rng, mask=False)]
            return step
        elif choice == "close 1005":
            writes = [ws_frame(OP_CLOSE, (1005).to_bytes(2, "big"), rng)]
        else:
            writes = [ws_frame(OP_CLOSE, rng.choice([0, 999, 1004, 1016, 2999, 5000, 65535]).to_bytes(2, "big"), rng)]
        return Step("protocol violation", choice, writes, close=1002)


# --- Background traffic -----------------------------------------------------------

class Background:
    """C writes into its private conversation and B into the shared one for
    the whole run, so a routing mistake has something to leak. C's socket is
    also the control: it must see its own messages."""

    def __init__(self, runner: "Runner"):
        self.runner = runner
        self.stop = asyncio.Event()
        self.c_received = 0
        self.c_sent = 0
        self.b_sent = 0
        self.problems: list[str] = []
        self.tasks = []

    async def writer(self, who: str, conversation: str, marker: str, interval: float):
        f = self.runner.fixture
        ws = await ws_connect(f.ws_url, compression=None, ping_interval=None, proxy=None, max_size=2**22)
        await ws.send(compact({"type": "auth", "token": f.token(who)}))
        await ws.send(compact({"type": "subscribe", "conversation_id": conversation}))
        n = 0
        received = asyncio.create_task(self.reader(ws, who))
        try:
            while not self.stop.is_set():
                n += 1
                await ws.send(compact({"type": "send", "conversation_id": conversation,
                                       "body": f"{marker} {n}", "client_id": f"bg-{who}-{n}"}))
                if n % 10 == 0:
                    await ws.send(compact({"type": "typing", "conversation_id": conversation}))
                    await ws.send(compact({"type": "read", "conversation_id": conversation, "seq": 1}))
                if who == "c":
                    self.c_sent += 1
                else:
                    self.b_sent += 1
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.stop.wait(), interval)
        finally:
            await ws.close()
            received.cancel()

    async def reader(self, ws, who):
        with contextlib.suppress(websockets.exceptions.ConnectionClosed):
            async for message in ws:
                frame = json.loads(message)
                if frame.get("type") == "error":
                    self.problems.append(f"background {who}: {message[:200]}")
                if who == "c" and frame.get("type") == "message":
                    self.c_received += 1

    def start(self):
        f = self.runner.fixture
        self.tasks = [asyncio.create_task(self.writer("c", f.private, f.marker, 0.05)),
                      asyncio.create_task(self.writer("b", f.shared, "from b", 0.2))]

    async def finish(self):
        self.stop.set()
        for task in self.tasks:
            try:
                await asyncio.wait_for(task, CLOSE_SECONDS)
            except Exception as error:  # noqa: BLE001
                self.problems.append(f"background writer failed: {error!r}")


# --- The process ------------------------------------------------------------------

def process_figures(pid: int, port: int) -> dict:
    """Resident memory and sockets of the server: those of clients (local
    port = the server's, the listener excluded) and all of them."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) * 1024
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    clients = 0
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/net/{table}") as lines:
            next(lines)
            for line in lines:
                fields = line.split()
                local_port = int(fields[1].split(":")[1], 16)
                state = fields[3]
                if fields[9] in inodes and local_port == port and state != "0A":  # 0A: LISTEN
                    clients += 1
    return {"rss": rss, "sockets": len(inodes), "client_sockets": clients}


class Runner:
    def __init__(self, args):
        self.args = args
        self.seed = args.seed
        self.plant = args.plant
        self.stats = Stats()
        run_tag = f"{args.seed}-{os.getpid()}"
        self.fixture = Fixture(args.url, args.secret, run_tag)
        self.port = int(args.url.rsplit(":", 1)[1].split("/")[0])

    async def run_iterations(self, iterations: list[int], concurrency: int, deadline: float | None = None):
        queue = collections.deque(iterations)
        deadline = deadline if deadline is not None else time.monotonic() + self.args.max_seconds

        async def worker():
            while queue and time.monotonic() < deadline:
                iteration = queue.popleft()
                await Connection(self, iteration).run()

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return len(queue)

    async def warm_up(self):
        """Valid traffic only, so the baseline counts what a working server
        holds (its pool, its caches), not a cold start."""
        f = self.fixture

        async def one(n):
            ws = await ws_connect(f.ws_url, compression=None, ping_interval=None, proxy=None)
            await ws.send(compact({"type": "auth", "token": f.token("a")}))
            await ws.send(compact({"type": "subscribe", "conversation_id": f.shared, "after_seq": 0}))
            await ws.send(compact({"type": "send", "conversation_id": f.shared, "body": f"warm {n}",
                                   "client_id": f"warm-{n}"}))
            await ws.send(compact({"type": "ping"}))
            async for message in ws:
                if json.loads(message).get("type") == "pong":
                    break
            await ws.close()

        for _ in range(2):
            await asyncio.wait_for(asyncio.gather(*(one(n) for n in range(self.args.concurrency * 2))), 60)

    async def settle(self, baseline: dict) -> dict:
        """Waits (up to 30 s) for the client sockets to be closed."""
        figures = process_figures(self.args.pid, self.port)
        for _ in range(60):
            if figures["client_sockets"] <= baseline["client_sockets"] + 2 and \
                    figures["sockets"] <= baseline["sockets"] + 4:
                break
            await asyncio.sleep(0.5)
            figures = process_figures(self.args.pid, self.port)
        return figures

    async def still_serving(self) -> list[str]:
        """After the fuzzing: alive, ready, and a send reaches a live subscriber."""
        problems = []
        f = self.fixture
        try:
            os.kill(self.args.pid, 0)
            with open(f"/proc/{self.args.pid}/status") as status:
                state = next(line for line in status if line.startswith("State:"))
            if "Z" in state.split()[1]:
                problems.append("the server process is a zombie")
        except OSError:
            return ["the server process is gone (crashed)"]
        try:
            with urllib.request.urlopen(f.url + "/readyz", timeout=ANSWER_SECONDS) as response:
                if response.status != 200:
                    problems.append(f"/readyz answered {response.status}")
        except Exception as error:  # noqa: BLE001
            problems.append(f"/readyz failed: {error!r}")
        try:
            ws = await ws_connect(f.ws_url, compression=None, ping_interval=None, proxy=None,
                                  open_timeout=ANSWER_SECONDS)
            try:
                await ws.send(compact({"type": "auth", "token": f.token("a")}))
                await ws.send(compact({"type": "subscribe", "conversation_id": f.shared}))
                frame = json.loads(await asyncio.wait_for(ws.recv(), ANSWER_SECONDS))
                if frame.get("type") != "subscribed":
                    problems.append(f"the final subscription got {summarize(frame)}")
                body = f"after the fuzzing {self.seed}"
                status, _ = f.http("POST", f"/v1/conversations/{f.shared}/messages", "b",
                                   {"body": body, "client_id": f"final-{os.getpid()}"})
                if status not in (200, 201):
                    problems.append(f"the final send over HTTP answered {status}")
                await ws.send(compact({"type": "send", "conversation_id": f.shared, "body": body + " (socket)",
                                       "client_id": f"final-socket-{os.getpid()}"}))
                wanted = {body, body + " (socket)"}
                acked = False
                deadline = time.monotonic() + ANSWER_SECONDS
                while (wanted or not acked) and time.monotonic() < deadline:
                    frame = json.loads(await asyncio.wait_for(ws.recv(), deadline - time.monotonic()))
                    if frame.get("type") == "message":
                        wanted.discard(frame["message"]["body"])
                    if frame.get("type") == "ack":
                        acked = True
                if wanted or not acked:
                    problems.append(f"the final live subscription missed {sorted(wanted)} (ack: {acked})")
            finally:
                await ws.close()
        except Exception as error:  # noqa: BLE001
            problems.append(f"the final live check failed: {error!r}")
        return problems

    async def main(self) -> int:
        started = time.monotonic()
        f = self.fixture
        f.set_up()
        stats = self.stats
        if self.args.only is not None:
            iterations = [self.args.only]
        else:
            iterations = list(range(self.args.iterations))
        await self.warm_up()
        await asyncio.sleep(1)
        baseline = await self.settle(process_figures(self.args.pid, self.port))
        background = Background(self)
        background.start()
        await asyncio.sleep(0.5)
        fuzz_started = time.monotonic()
        concurrency = 1 if self.args.only is not None else self.args.concurrency
        # The first third warms what a server grows to under this traffic
        # and keeps (its allocator's arenas, NIO's buffers, pools): memory is
        # measured from there, so that what still grows is what leaks.
        warming = len(iterations) // 3
        deadline = fuzz_started + self.args.max_seconds
        left = await self.run_iterations(iterations[:warming], concurrency, deadline)
        warmed = await self.settle(baseline)
        left += await self.run_iterations(iterations[warming:], concurrency, deadline)
        fuzz_seconds = time.monotonic() - fuzz_started
        await background.finish()
        problems = list(background.problems)
        if background.c_sent and background.c_received == 0:
            problems.append("user C's socket never received its own messages: the leak check saw no traffic")
        if left:
            problems.append(f"--max-seconds ran out with {left} iterations left")
        problems += await self.still_serving()
        after = await self.settle(baseline)
        rss_limit = max(warmed["rss"] * 1.15, warmed["rss"] + 12 * 2**20)
        if after["rss"] > rss_limit:
            problems.append(f"resident memory grew from {warmed['rss'] / 2**20:.1f} MiB after the first third of "
                            f"the connections to {after['rss'] / 2**20:.1f} MiB (limit {rss_limit / 2**20:.1f} MiB)")
        if after["client_sockets"] > baseline["client_sockets"] + 2:
            problems.append(f"client sockets: {after['client_sockets']} open after the run, "
                            f"{baseline['client_sockets']} before")
        if after["sockets"] > baseline["sockets"] + 4:
            problems.append(f"sockets: {after['sockets']} open after the run, {baseline['sockets']} before")
        for problem in problems:
            stats.violations.append({"iteration": None, "step": None, "user": None, "category": "server",
                                     "note": "", "detail": problem, "log": []})

        print(f"fuzz-stream: seed {self.seed}, {len(iterations) - left} connections, {stats.frames} frames "
              f"in {fuzz_seconds:.0f} s (whole run {time.monotonic() - started:.0f} s)")
        print(f"  background: C sent {background.c_sent} private messages (its socket received "
              f"{background.c_received}), B sent {background.b_sent}")
        print("  connections: " + ", ".join(f"{k} {v}" for k, v in sorted(stats.connections.items())))
        print("  sent by category:")
        for category, count in sorted(stats.sent.items(), key=lambda item: (-item[1], item[0])):
            print(f"    {count:6d}  {category}")
        print("  answers by kind:")
        for kind, count in sorted(stats.answers.items(), key=lambda item: (-item[1], item[0])):
            print(f"    {count:6d}  {kind}")
        print(f"  server: memory {baseline['rss'] / 2**20:.1f} -> {warmed['rss'] / 2**20:.1f} (a third of the "
              f"connections) -> {after['rss'] / 2**20:.1f} MiB, sockets "
              f"{baseline['sockets']} -> {after['sockets']} (client sockets {baseline['client_sockets']} -> "
              f"{after['client_sockets']})")
        print(f"  violations: {len(stats.violations)}")
        for violation in stats.violations[:25]:
            where = "" if violation["iteration"] is None else \
                f"iteration {violation['iteration']} step {violation['step']} ({violation['user']}, " \
                f"{violation['category']}: {violation['note']}): "
            print(f"    {where}{violation['detail'][:600]}")
            for line in violation["log"]:
                print(f"        {line[:200]}")
            if violation["iteration"] is not None:
                print(f"        reproduce: scripts/fuzz-stream --seed {self.seed} --only {violation['iteration']}")
        if len(stats.violations) > 25:
            print(f"    ... and {len(stats.violations) - 25} more")
        return 1 if stats.violations else 0


# --- Self-test: the oracle must catch planted faults ---------------------------------

def self_test() -> int:
    """Feeds the oracle frames a broken server would send and checks that
    each is caught: a fuzzer that can no longer see anything fails here."""
    fixture = Fixture("http://127.0.0.1:1", "s" * 64, "self-test")
    fixture.shared = str(uuid.UUID(int=1))
    fixture.private = str(uuid.UUID(int=2))
    failures = []
    checks = [0]

    def checker():
        checks[0] += 1
        return Checker(fixture, "a", Stats())

    def expect_problem(name, frames, prepare=None):
        check = checker()
        if prepare:
            prepare(check)
        for frame in frames:
            check.receive(frame if isinstance(frame, (str, bytes)) else compact(frame))
        if not check.problems:
            failures.append(f"not caught: {name}")

    def expect_clean(name, frames, prepare=None):
        check = checker()
        if prepare:
            prepare(check)
        for frame in frames:
            check.receive(frame if isinstance(frame, (str, bytes)) else compact(frame))
        if check.problems:
            failures.append(f"false alarm: {name}: {check.problems}")

    def subscribed(check, after=None, last=10):
        check.pending[fixture.shared] = after
        check.receive(compact({"type": "subscribed", "conversation_id": fixture.shared, "last_seq": last,
                               "version": last}))

    def message(seq, conversation=None, body="hi", sender=None):
        return {"type": "message", "message": {"conversation_id": conversation or fixture.shared, "seq": seq,
                                               "body": body, "sender": sender or fixture.users["b"]}}

    expect_problem("C's message on A's socket", [message(1, fixture.private, f"{fixture.marker} 1")])
    expect_problem("C's body inside a shared message", [message(11, body=f"{fixture.marker} 7")], subscribed)
    expect_problem("C's id in a typing frame", [{"type": "typing", "conversation_id": fixture.private,
                                                 "user_id": fixture.users["c"]}])
    expect_problem("C's id in an error message text", [{"type": "error", "code": "forbidden",
                                                        "message": f"see {fixture.private}", "ref": fixture.private}])
    expect_problem("C's id in the ref of a subscribed frame", [{"type": "subscribed", "conversation_id":
                                                                fixture.private, "last_seq": 1, "version": 1}])
    expect_problem("a message without a subscription", [message(1)])
    expect_problem("a gap", [message(11), message(13)], subscribed)
    expect_problem("a duplicate", [message(11), message(11)], subscribed)
    expect_problem("a backlog that starts late", [message(5)], lambda c: subscribed(c, after=3))
    expect_problem("resync without a reason", [{"type": "resync_required", "conversation_id": fixture.shared,
                                                "last_seq": 10}], subscribed)
    expect_problem("typing echoed to the typist", [{"type": "typing", "conversation_id": fixture.shared,
                                                    "user_id": fixture.users["a"]}], subscribed)
    expect_problem("an undocumented frame type", [{"type": "debug", "detail": "x"}])
    expect_problem("a binary frame", [b"\x00\x01"])
    expect_problem("not JSON", ["{"])
    expect_clean("the error answering a frame that named C's conversation",
                 [{"type": "error", "code": "conversation_not_found", "message": "No such conversation.",
                   "ref": fixture.private}])
    expect_clean("a subscription's messages in order", [message(11), message(12)], subscribed)
    expect_clean("a backlog then live", [message(4), message(5)], lambda c: subscribed(c, after=3, last=4))
    expect_clean("resync after a long absence", [{"type": "resync_required", "conversation_id": fixture.shared,
                                                  "last_seq": 2000}, message(2001)],
                 lambda c: subscribed(c, after=0, last=2000))

    replies = [
        ("a wrong error code", Reply("error", "invalid_json", ref=None), {"type": "error", "code": "invalid_field",
                                                                           "message": "m"}),
        ("a wrong ref", Reply("error", "conversation_not_found", ref="x"),
         {"type": "error", "code": "conversation_not_found", "message": "m", "ref": "y"}),
        ("a ref where none is due", Reply("error", "invalid_json", ref=None),
         {"type": "error", "code": "invalid_json", "message": "m", "ref": "y"}),
        ("an ack of another body", Reply("ack", client_id="c", body="one", replayed=False),
         {"type": "ack", "client_id": "c", "replayed": False, "message": {"body": "two"}}),
        ("an ack that says replayed", Reply("ack", client_id="c", body="one", replayed=False),
         {"type": "ack", "client_id": "c", "replayed": True, "message": {"body": "one"}}),
        ("pong for an error", Reply("error", "invalid_json", ref=None), {"type": "pong"}),
    ]
    checks[0] += len(replies) + 3
    for name, reply, frame in replies:
        if reply.mismatch(frame) is None:
            failures.append(f"not caught: {name}")
    if Reply("error", "invalid_json", ref=None).mismatch({"type": "error", "code": "invalid_json",
                                                           "message": "m"}) is not None:
        failures.append("false alarm: the expected error")
    # The frames written are what they claim to be.
    rng = random.Random(1)
    frame = ws_frame(OP_TEXT, b"hello", rng)
    key = frame[2:6]
    if frame[0] != 0x81 or frame[1] != 0x85 or bytes(b ^ key[i % 4] for i, b in enumerate(frame[6:])) != b"hello":
        failures.append("ws_frame does not write a masked text frame")
    if len(ws_frame(OP_TEXT, b"x" * 70000, rng)) != 70000 + 14:
        failures.append("ws_frame does not write a 64-bit length")

    for failure in failures:
        print(f"self-test: {failure}")
    total = checks[0]
    print(f"self-test: {total - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="the server, http://127.0.0.1:PORT")
    parser.add_argument("--secret", help="the server's SCROLLBACK_JWT_SECRET")
    parser.add_argument("--pid", type=int, help="the server's process id, for its memory and sockets")
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--iterations", type=int, default=1500, help="connections (each up to 30 frames)")
    parser.add_argument("--only", type=int, help="run just this iteration (to reproduce it)")
    parser.add_argument("--concurrency", type=int, default=8)
    # A bound for a run that hangs, far above what the connections take on a
    # busy machine: the budget is --iterations, and a slower machine must
    # not fuzz less.
    parser.add_argument("--max-seconds", type=float, default=900, help="stop starting connections after this, and fail")
    parser.add_argument("--plant", choices=["leak"], help="pretend the server leaked C's conversation (must fail)")
    parser.add_argument("--self-test", action="store_true", help="check that the oracle catches planted faults")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not (args.url and args.secret and args.pid):
        parser.error("--url, --secret and --pid are required")
    return asyncio.run(Runner(args).main())


if __name__ == "__main__":
    sys.exit(main())
