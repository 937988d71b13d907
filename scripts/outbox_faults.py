#!/usr/bin/env python3
"""The outbox under faults (run by scripts/outbox-faults, which starts
PostgreSQL and two instances posting their webhooks and their pushes here).

A receiver on loopback, the webhook receiver on /hook and the push gateway
on /push, records every POST and verifies its signature, while senders
(the members, each with a device, none with a live socket) send chat
messages through both instances, phase
after phase: a clean phase, the receiver answering 500, the receiver
hanging past the delivery timeout, the receiver down, an instance killed
mid-delivery, PostgreSQL killed and started again. Afterwards it checks:

  * every signature verified;
  * no event arrived twice in the clean phase;
  * every event of a conversation arrived in order (first arrivals);
  * the message.created events are exactly the messages stored: every
    acknowledged send has its event, and no send that did not commit has
    one (sends refused, and messages inserted by transactions rolled back);
  * every member but the sender was pushed every stored message, each
    member's pushes of a conversation first arrived in order, and no push
    went to the sender;
  * nothing is left pending or dead in the outbox.

It prints one line per phase and the figures of the clean phase (events
delivered per second beside sends per second), and exits 1 on any failure.
"""
import argparse
import base64
import hashlib
import hmac
import http.server
import json
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


def jwt(user, secret):
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": user, "exp": int(time.time()) + 3600}).encode())
    signature = hmac.new(secret.encode(), f"{header}.{claims}".encode(), hashlib.sha256).digest()
    return f"{header}.{claims}.{b64(signature)}"


def verify(header, body, secret):
    try:
        parts = dict(part.split("=", 1) for part in header.split(","))
        expected = hmac.new(secret.encode(), parts["t"].encode() + b"." + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(parts["v1"], expected) and abs(time.time() - int(parts["t"])) <= 300
    except (KeyError, ValueError):
        return False


class Receiver:
    """Records deliveries; `mode` decides the answer: ok, fail, hang, down."""

    def __init__(self, port, secret):
        self.port, self.secret = port, secret
        self.lock = threading.Lock()
        self.deliveries = []  # (arrival, phase, event dict, verified, event id): webhooks
        self.pushes = []  # (arrival, phase, notification dict, verified, push id): the push gateway
        self.mode = "ok"
        self.phase = "start"
        self.server = None

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                mode = receiver.mode
                if mode == "hang":
                    time.sleep(3)
                    self.answer(200)
                    return
                if mode == "fail":
                    self.answer(500)
                    return
                ok = verify(self.headers.get("Scrollback-Signature", ""), body, receiver.secret)
                event = json.loads(body)
                event["_attempt"] = self.headers.get("Scrollback-Attempt")
                with receiver.lock:
                    (receiver.pushes if self.path == "/push" else receiver.deliveries).append(
                        (time.monotonic(), receiver.phase, event, ok, self.headers.get("Scrollback-Event-Id")))
                self.answer(204)

            def answer(self, status):
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                # An instance killed mid-request resets its connection: expected here.
                if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Traffic:
    def __init__(self, targets, secret, conversations, rate):
        self.targets, self.secret, self.rate = targets, secret, rate
        self.users = [f"u{index}" for index in range(8)]
        self.tokens = {user: jwt(user, secret) for user in self.users + ["mallory"]}
        self.lock = threading.Lock()
        self.acknowledged = set()  # (conversation, seq)
        self.sent = 0
        self.refused = 0
        self.running = False
        self.conversations = []
        for index in range(conversations):
            reply = self.call("POST", "/v1/conversations", self.users[0],
                              {"title": f"c{index}", "members": self.users[1:4]})
            self.conversations.append(reply["id"])
        for user in self.users[:4]:
            self.call("PUT", f"/v1/devices/phone-{user}", user, {"platform": "apns", "token": f"token-{user}"})

    def call(self, method, path, user, body=None, target=None, attempts=30):
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(attempts):
            url = (target or random.choice(self.targets)) + path
            request = urllib.request.Request(url, data=data, method=method, headers={
                "Authorization": f"Bearer {self.tokens[user]}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return json.loads(response.read() or b"{}")
            except urllib.error.HTTPError as error:
                if error.code in (503, 502, 504):
                    time.sleep(0.3)
                    continue
                raise
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                time.sleep(0.3)
                continue
        raise RuntimeError(f"{method} {path} got no answer in {attempts} attempts")

    def sender(self, number):
        index = 0
        while self.running:
            index += 1
            conversation = random.choice(self.conversations)
            user = random.choice(self.users[:4])
            body = {"body": f"s{number}-{index}", "client_id": f"s{number}-{index}"}
            try:
                reply = self.call("POST", f"/v1/conversations/{conversation}/messages", user, body)
                with self.lock:
                    self.acknowledged.add((conversation, reply["message"]["seq"]))
                    self.sent += 1
            except Exception as error:  # an unknown outcome: the check reads what was stored
                print(f"  a send got no answer: {error}", file=sys.stderr)
            if random.random() < 0.05:
                try:
                    self.call("POST", f"/v1/conversations/{conversation}/messages", "mallory",
                              {"body": f"refused-{number}-{index}"})
                except urllib.error.HTTPError as error:
                    if 400 <= error.code < 500:  # not a member: 404, as for a conversation that does not exist
                        with self.lock:
                            self.refused += 1
                except Exception:
                    pass
            time.sleep(random.expovariate(self.rate))

    def start(self, senders):
        self.running = True
        self.threads = [threading.Thread(target=self.sender, args=(number,), daemon=True) for number in range(senders)]
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.running = False
        for thread in self.threads:
            thread.join()


def psql(url, sql):
    return subprocess.run(["psql", "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", url, "-c", sql],
                          check=True, capture_output=True, text=True).stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", required=True)
    parser.add_argument("--jwt-secret", required=True)
    parser.add_argument("--webhook-secret", required=True)
    parser.add_argument("--receiver-port", type=int, required=True)
    parser.add_argument("--fault-command", required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--senders", type=int, default=6)
    arguments = parser.parse_args()

    receiver = Receiver(arguments.receiver_port, arguments.webhook_secret)
    receiver.start()
    traffic = Traffic(arguments.targets.split(","), arguments.jwt_secret, conversations=6, rate=8)
    problems = []

    def drain(what, limit=120, sink=None):
        """Waits until the outbox (of `sink`, or of every sink) has nothing pending."""
        deadline = time.monotonic() + limit
        only = f" AND sink = '{sink}'" if sink else ""
        while time.monotonic() < deadline:
            pending = int(psql(arguments.database_url,
                               "SELECT count(*) FROM outbox WHERE state = 'pending'" + only).strip())
            if pending == 0:
                return True
            time.sleep(0.2)
        problems.append(f"{what}: events still pending after {limit} s")
        return False

    def rolled_back(count):
        for index in range(count):
            conversation = random.choice(traffic.conversations)
            psql(arguments.database_url, f"""
                BEGIN;
                WITH c AS (UPDATE conversations SET last_seq = last_seq + 1, version = version + 1
                           WHERE id = '{conversation}' RETURNING id, last_seq, version)
                INSERT INTO messages (conversation_id, seq, sender, body, version)
                SELECT id, last_seq, 'u0', 'rolled-back-{index}', version FROM c;
                ROLLBACK;""")

    # The clean phase: figures, and no event twice.
    receiver.phase = "clean"
    drain("before the clean phase")
    before_clean = len(receiver.deliveries)
    traffic.start(arguments.senders)
    started = time.monotonic()
    time.sleep(arguments.seconds)
    traffic.stop()
    sent_seconds = time.monotonic() - started
    sent_clean = traffic.sent
    drain("the clean phase")
    delivered_seconds = max(receiver.deliveries[-1][0] - started, 1e-9) if receiver.deliveries else 0
    clean = receiver.deliveries[before_clean:]
    ids = [delivery[4] for delivery in clean]
    twice = len(ids) - len(set(ids))
    if twice:
        problems.append(f"the clean phase: {twice} event(s) delivered twice")
    print(f"clean: {sent_clean} sends in {sent_seconds:.1f} s ({sent_clean / sent_seconds:.0f}/s), "
          f"{len(clean)} events delivered by {delivered_seconds:.1f} s "
          f"({len(clean) / delivered_seconds:.0f}/s), {twice} twice")

    # Delivery at capacity: a backlog built while the receiver fails, then
    # drained once it answers again.
    receiver.phase = "backlog"
    receiver.mode = "fail"
    traffic.start(arguments.senders)
    time.sleep(arguments.seconds)
    traffic.stop()
    backlog = int(psql(arguments.database_url,
                       "SELECT count(*) FROM outbox WHERE state = 'pending' AND sink = 'webhook'").strip())
    before_backlog = len(receiver.deliveries)
    receiver.mode = "ok"
    started = time.monotonic()
    drain("the backlog", sink="webhook")
    took = time.monotonic() - started
    drain("the backlog's pushes")
    print(f"backlog: {backlog} events waiting drained in {took:.1f} s ({backlog / took:.0f}/s; "
          f"retries wait at most 1 s), {len(receiver.deliveries) - before_backlog} delivered")

    def phase(name, during):
        receiver.phase = name
        traffic.start(arguments.senders)
        time.sleep(1)
        during()
        time.sleep(1)
        traffic.stop()
        rolled_back(2)
        took = time.monotonic()
        drained = drain(name)
        print(f"{name}: {'drained' if drained else 'NOT drained'} {time.monotonic() - took:.1f} s after the fault")

    def receiver_mode(mode, seconds):
        def run():
            receiver.mode = mode
            time.sleep(seconds)
            receiver.mode = "ok"
        return run

    def receiver_down():
        receiver.stop()
        time.sleep(4)
        receiver.start()

    def fault(name):
        return lambda: subprocess.run([arguments.fault_command, name], check=True)

    phase("receiver-500", receiver_mode("fail", 4))
    phase("receiver-hang", receiver_mode("hang", 4))
    phase("receiver-down", receiver_down)
    phase("instance-kill", fault("instance-kill"))
    phase("postgres-kill", fault("postgres-kill"))

    # Every check over the whole run.
    unverified = sum(1 for delivery in receiver.deliveries if not delivery[3])
    if unverified:
        problems.append(f"{unverified} deliveries whose signature did not verify")
    first = {}
    order = {}
    for arrival, phase_name, event, _, event_id in receiver.deliveries:
        if event_id in first:
            continue
        first[event_id] = event
        order.setdefault(event["conversation_id"], []).append((arrival, phase_name, event))
    misordered = 0
    for conversation, arrivals in order.items():
        events = [event for _, _, event in arrivals]
        versions = [event["version"] for event in events if event["version"] is not None]
        ids = [int(event["id"]) for event in events]
        if versions != sorted(versions) or len(set(versions)) != len(versions) or ids != sorted(ids):
            misordered += 1
            # Where: the first inversion, with the arrivals around it.
            versioned = [index for index, event in enumerate(events) if event["version"] is not None]
            at = next((index for index in range(1, len(ids)) if ids[index] < ids[index - 1]),
                      next((b for a, b in zip(versioned, versioned[1:])
                            if events[b]["version"] <= events[a]["version"]), 0))
            print(f"  conversation {conversation}: first arrivals out of order at {at}:", file=sys.stderr)
            for arrival, phase_name, event in arrivals[max(0, at - 4):at + 4]:
                print(f"    {arrival:.3f} {phase_name} event {event['id']} seq {event['seq']} "
                      f"version {event['version']} attempt {event['_attempt']}", file=sys.stderr)
    if misordered:
        problems.append(f"{misordered} conversation(s) whose events arrived out of order")
    created = {(event["conversation_id"], event["seq"]) for event in first.values()
               if event["type"] == "message.created"}
    stored = set()
    for line in psql(arguments.database_url, "SELECT conversation_id, seq FROM messages").split():
        conversation, seq = line.split("|")
        stored.add((conversation, int(seq)))
    missing = traffic.acknowledged - created
    if missing:
        problems.append(f"{len(missing)} acknowledged send(s) without their event")
    if stored - created:
        problems.append(f"{len(stored - created)} stored message(s) without their event")
    if created - stored:
        problems.append(f"{len(created - stored)} event(s) of messages never stored (rolled back or refused)")
    bodies = [event["data"].get("body", "") for event in first.values() if event["type"] == "message.created"]
    if any(body.startswith(("refused-", "rolled-back-")) for body in bodies):
        problems.append("an event of a send that did not commit")
    # The pushes: every member but the sender, for every stored message
    # (no member has a live socket, none muted the conversation).
    members = traffic.users[:4]
    unverified_pushes = sum(1 for push in receiver.pushes if not push[3])
    if unverified_pushes:
        problems.append(f"{unverified_pushes} pushes whose signature did not verify")
    expected_pushes = set()
    for line in psql(arguments.database_url, "SELECT conversation_id, seq, sender FROM messages").split():
        conversation, seq, sender = line.split("|")
        expected_pushes |= {(conversation, int(seq), member) for member in members if member != sender}
    pushed = {}
    for arrival, phase_name, push, _, push_id in receiver.pushes:
        pushed.setdefault(push_id, (push["conversation_id"].lower(), push["seq"], push["user_id"], push["sender"]))
    got_pushes = {(conversation, seq, user) for conversation, seq, user, _ in pushed.values()}
    if expected_pushes - got_pushes:
        problems.append(f"{len(expected_pushes - got_pushes)} (message, member) pair(s) never pushed")
    if got_pushes - expected_pushes:
        problems.append(f"{len(got_pushes - expected_pushes)} push(es) of a message not stored or to its sender")
    push_order = {}
    for conversation, seq, user, _ in pushed.values():
        push_order.setdefault((conversation, user), []).append(seq)
    pushes_misordered = sum(1 for seqs in push_order.values() if seqs != sorted(seqs))
    if pushes_misordered:
        problems.append(f"{pushes_misordered} (conversation, member) pair(s) whose pushes arrived out of order")
    print(f"push: {len(pushed)} pushes, {len(receiver.pushes) - len(pushed)} repeated after faults, "
          f"{len(expected_pushes - got_pushes)} missing, {unverified_pushes} unverified, "
          f"{pushes_misordered} out of order")
    left = psql(arguments.database_url, "SELECT count(*) FROM outbox WHERE state <> 'delivered'").strip()
    if left != "0":
        problems.append(f"{left} event(s) pending or dead at the end")
    duplicates = len(receiver.deliveries) - len(first)
    print(f"total: {traffic.sent} acknowledged sends, {traffic.refused} refused, 10 rolled back; "
          f"{len(first)} events, {len(receiver.deliveries)} deliveries ({duplicates} repeated after faults), "
          f"{unverified} unverified, {misordered} out of order")
    receiver.stop()
    for problem in problems:
        print(f"FAILED: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
