#!/usr/bin/env python3
"""The demo web client in headless Chromium, checked by geometry read from the DOM.

Run by scripts/browser-test, which starts the server (`serve --demo`) first.
Each check prints one line; any failure ends the run with a non-zero status.
"""
import argparse
import json
import os
import http.client
import http.server
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.error
import urllib.request
import zlib

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By

failures = []


def check(condition, what):
    print(("ok    " if condition else "FAIL  ") + what, flush=True)
    if not condition:
        failures.append(what)


class API:
    """The HTTP API, as a user whose token the demo route minted."""

    def __init__(self, url, user):
        self.url = url
        self.user = user
        self.token = self.call("POST", "/demo/token", {"user": user}, auth=False)["token"]

    def open(self, method, path, body=None, auth=True):
        """Sends a request; the open response (an HTTPError for a refusal)."""
        request = urllib.request.Request(self.url + path, method=method)
        request.add_header("Content-Type", "application/json")
        if auth:
            request.add_header("Authorization", "Bearer " + self.token)
        data = json.dumps(body).encode() if body is not None else None
        return urllib.request.urlopen(request, data, timeout=30)

    def call(self, method, path, body=None, auth=True):
        with self.open(method, path, body, auth) as response:
            return json.loads(response.read() or b"null")

    def status(self, method, path, body=None):
        """The HTTP status of a call (a refusal is a status, not an exception)."""
        try:
            with self.open(method, path, body) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    def photo(self, conversation, filename, data, body=""):
        """Uploads a PNG and sends it; answers the stored message."""
        ticket = self.call("POST", f"/v1/conversations/{conversation}/uploads",
                           {"filename": filename, "content_type": "image/png", "size": len(data)})
        request = urllib.request.Request(self.url + ticket["upload_url"], method="PUT", data=data)
        request.add_header("Content-Type", "image/png")
        request.add_header("Authorization", "Bearer " + self.token)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["complete"], f"{filename} was not complete"
        return self.call("POST", f"/v1/conversations/{conversation}/messages",
                         {"body": body, "attachments": [ticket["upload_id"]]})["message"]

    def conversation(self, title, members, messages):
        created = self.call("POST", "/v1/conversations", {"title": title, "members": members})
        for n in range(1, messages + 1):
            self.call("POST", f"/v1/conversations/{created['id']}/messages", {"body": f"{title} message {n}"})
        return created["id"]


class Server:
    """`scrollback serve --demo`, with the environment this script was given."""

    def __init__(self, binary, url, log):
        self.binary = binary
        self.url = url
        self.log = open(log, "ab")
        self.process = None

    def start(self):
        self.process = subprocess.Popen([self.binary, "serve", "--demo"], stdout=self.log, stderr=self.log, env=os.environ)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the server exited with {self.process.returncode}")
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            time.sleep(0.2)
        raise AssertionError("the server did not become ready in 60 s")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


class WebFromDisk:
    """A proxy in front of the server that answers the page's own files (`/`,
    `/web/NAME`) from a folder, and hands every other request, WebSocket
    upgrades included, to the server: the page as it is on disk, run against
    a binary built before it changed (the server embeds its copy at build
    time)."""

    TYPES = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
             ".js": "text/javascript; charset=utf-8"}

    def __init__(self, folder, backend):
        self.folder = folder
        self.backend = urllib.parse.urlsplit(backend)
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *arguments):
                pass

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                name = "index.html" if path == "/" else path[len("/web/"):] if path.startswith("/web/") else None
                if name is not None and "/" not in name:
                    return proxy.file(self, name)
                if self.headers.get("Upgrade", "").lower() == "websocket":
                    return proxy.tunnel(self)
                proxy.forward(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = lambda self: proxy.forward(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def file(self, handler, name):
        path = os.path.join(self.folder, name)
        if not os.path.isfile(path):
            return self.forward(handler)
        with open(path, "rb") as file:
            body = file.read()
        handler.send_response(200)
        handler.send_header("Content-Type", self.TYPES.get(os.path.splitext(name)[1], "application/octet-stream"))
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def forward(self, handler):
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in ("connection", "keep-alive", "host")}
        try:
            connection = http.client.HTTPConnection(self.backend.hostname, self.backend.port, timeout=60)
            connection.request(handler.command, handler.path, body, headers)
            response = connection.getresponse()
            data = response.read()
        except OSError:
            handler.send_response(502)  # the server is down (it is killed on purpose once)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        handler.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(data)
        connection.close()

    def tunnel(self, handler):
        """Sends the upgrade request on to the server, then copies bytes both
        ways until either side closes."""
        handler.close_connection = True
        try:
            upstream = socket.create_connection((self.backend.hostname, self.backend.port), timeout=10)
        except OSError:
            handler.send_response(502)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return
        upstream.settimeout(None)
        head = f"{handler.command} {handler.path} HTTP/1.1\r\n" + "".join(
            f"{k}: {v}\r\n" for k, v in handler.headers.items()) + "\r\n"
        upstream.sendall(head.encode("latin-1"))
        handler.wfile.flush()
        client = handler.connection
        sockets = [client, upstream]
        try:
            while True:
                readable, _, _ = select.select(sockets, [], [])
                for source in readable:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is client else client).sendall(data)
        except OSError:
            pass
        finally:
            upstream.close()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def png(width, height, rgb):
    """A valid PNG of one colour: small, whatever its pixel size."""
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def browser(width, height):
    options = Options()
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--force-device-scale-factor=1"]:
        options.add_argument(argument)
    options.binary_location = "/usr/bin/chromium"
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def until(driver, what, condition, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def click(driver, selector, what, seconds=10):
    """Clicks the element; the page replaces its rows as frames arrive, so the
    one found may be gone by the click, and then the new one is clicked."""
    def attempt():
        try:
            driver.find_element(By.CSS_SELECTOR, selector).click()
            return True
        except (NoSuchElementException, StaleElementReferenceException):
            return False
    until(driver, what, attempt, seconds)


def sign_in(driver, url, user):
    driver.get(url + "/")
    driver.find_element(By.ID, "user").send_keys(user)
    driver.find_element(By.CSS_SELECTOR, "#signin-form button").click()
    until(driver, "the inbox", lambda: driver.find_elements(By.CSS_SELECTOR, "#conversations li"))


def open_conversation(driver, conversation_id, count):
    # The inbox is drawn again as frames arrive: the row is clicked as it is then.
    click(driver, f'#conversations li[data-id="{conversation_id}"]', f"conversation {conversation_id} in the inbox")
    until(driver, f"{count} messages", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#messages li")) >= count)
    time.sleep(0.2)  # one more frame for the padding and the scroll position


GEOMETRY = """
const viewport = document.getElementById('viewport');
const items = [...document.querySelectorAll('#messages li')];
const top = viewport.getBoundingClientRect().top;
return {
  viewport: viewport.clientHeight,
  older: document.getElementById('older').offsetHeight,
  content: document.getElementById('older').offsetHeight + document.getElementById('messages').offsetHeight,
  padding: document.getElementById('padding').getBoundingClientRect().height,
  scrollTop: viewport.scrollTop,
  scrollHeight: viewport.scrollHeight,
  firstTop: items.length ? items[0].getBoundingClientRect().top - top : null,
  lastBottom: items.length ? items[items.length - 1].getBoundingClientRect().bottom - top : null,
  lastSeq: items.length ? Number(items[items.length - 1].dataset.seq) : null,
  count: items.length,
};
"""


def geometry(driver):
    return driver.execute_script(GEOMETRY)


def check_padding(driver, what):
    g = geometry(driver)
    expected = max(g["viewport"] - g["content"], 0)
    check(abs(g["padding"] - expected) <= 1,
          f"{what}: padding {g['padding']:.1f} px = max(viewport {g['viewport']} - content {g['content']}, 0) = {expected}")


ROW = """
const item = document.querySelector(arguments[0] + ' li[data-seq="' + arguments[1] + '"]');
if (!item) return null;
const quote = item.querySelector('.quote');
const replies = item.querySelector('.replies');
return {
  text: item.querySelector('.text').textContent,
  quote: quote ? [quote.querySelector('.sender').textContent, quote.querySelector('.excerpt').textContent] : null,
  replies: replies ? replies.textContent : null,
  reactions: [...item.querySelectorAll('.reaction')].map(c => [c.textContent, c.classList.contains('me')]),
  mentions: [...item.querySelectorAll('.mention')].map(m => [m.textContent, m.classList.contains('me')]),
};
"""


def row(driver, seq, where="#messages"):
    """What the row of `seq` shows, read at once; None while it is not there."""
    return driver.execute_script(ROW, where, seq)


def reactions(driver, seq):
    shown = row(driver, seq)
    return shown["reactions"] if shown else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--server", required=True, help="the scrollback binary")
    parser.add_argument("--log", required=True, help="where the server's output goes")
    parser.add_argument("--screenshots", default=".")
    parser.add_argument("--web", help="serve the page's files from this folder instead of the binary's copy")
    arguments = parser.parse_args()
    server = Server(arguments.server, arguments.url, arguments.log)
    server.start()
    proxy = WebFromDisk(arguments.web, arguments.url) if arguments.web else None
    url = proxy.url if proxy else arguments.url
    try:
        run(url, server, arguments.screenshots)
    finally:
        if proxy:
            proxy.stop()
        server.stop()
    if failures:
        print(f"{len(failures)} check(s) failed", flush=True)
        sys.exit(1)
    print("all checks passed", flush=True)


def texts(driver):
    """The rows' texts, read at once (the page replaces its rows as frames arrive)."""
    return driver.execute_script("return [...document.querySelectorAll('#messages li')].map(i => i.innerText)")


def run(url, server, screenshots):
    alice = API(url, "alice")
    bob_api = API(url, "bob")
    short = alice.conversation("short", ["bob"], 3)
    long = alice.conversation("long", ["bob"], 120)
    threads = alice.conversation("threads", ["bob"], 2)

    first = browser(900, 700)
    second = None
    try:
        sign_in(first, url, "alice")

        # A short conversation sits at the top; the padding fills the rest.
        open_conversation(first, short, 3)
        g = geometry(first)
        expected = max(g["viewport"] - g["content"], 0)
        check(abs(g["padding"] - expected) <= 1,
              f"short: padding {g['padding']:.1f} px = max(viewport {g['viewport']} - content {g['content']}, 0) = {expected}")
        check(g["scrollTop"] == 0 and abs(g["firstTop"] - g["older"]) <= 1,
              f"short: the three messages sit at the top (the first at {g['firstTop']:.1f} px, under the {g['older']} px heading; not scrolled)")
        check(abs(g["lastBottom"] + g["padding"] - g["viewport"]) <= 1,
              f"short: the newest message's bottom plus the padding is the viewport's bottom ({g['lastBottom']:.1f} + {g['padding']:.1f} vs {g['viewport']})")
        first.save_screenshot(f"{screenshots}/short.png")

        # Resizing the window recomputes the padding.
        first.set_window_size(900, 500)
        time.sleep(0.3)
        r = geometry(first)
        expected = max(r["viewport"] - r["content"], 0)
        check(r["viewport"] < g["viewport"] and abs(r["padding"] - expected) <= 1,
              f"resize: viewport {g['viewport']} -> {r['viewport']} px, padding {r['padding']:.1f} = {expected}")
        first.set_window_size(900, 700)
        time.sleep(0.3)

        # A long conversation opens pinned to its newest message.
        open_conversation(first, long, 50)
        g = geometry(first)
        check(g["lastSeq"] == 120, f"long: the newest message (seq {g['lastSeq']}) is the last one")
        check(abs(g["scrollTop"] + g["viewport"] - g["scrollHeight"]) <= 1 and g["padding"] == 0,
              f"long: pinned to the bottom (scrollTop {g['scrollTop']} + {g['viewport']} = {g['scrollHeight']}), no padding")
        first.save_screenshot(f"{screenshots}/long.png")

        # An older page loads above without moving what the reader looks at.
        anchor = first.execute_script("""
            const viewport = document.getElementById('viewport');
            viewport.scrollTop = 100;
            const top = viewport.getBoundingClientRect().top;
            const item = [...document.querySelectorAll('#messages li')].find(i => i.getBoundingClientRect().bottom > top);
            return { seq: item.dataset.seq, top: item.getBoundingClientRect().top };
        """)
        until(first, "the older page", lambda: geometry(first)["count"] > g["count"])
        time.sleep(0.2)
        moved = first.execute_script(
            "return document.querySelector('#messages li[data-seq=\"' + arguments[0] + '\"]').getBoundingClientRect().top;",
            anchor["seq"])
        check(abs(moved - anchor["top"]) <= 1,
              f"older page: {geometry(first)['count'] - g['count']} messages above, seq {anchor['seq']} stays at {anchor['top']:.1f} px ({moved:.1f})")

        # A message from a second window appears live in the first.
        open_conversation(first, short, 3)
        second = browser(900, 700)
        sign_in(second, url, "bob")
        open_conversation(second, short, 3)
        until(first, "bob online in alice's window", lambda: "bob online" in first.find_element(By.ID, "presence").text)
        check(True, "presence: alice's window shows \"bob online\" once bob's window is open")
        box = second.find_element(By.ID, "body")
        box.send_keys("hello from bob")
        sent = time.monotonic()
        second.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").click()
        try:
            until(first, "bob's message in alice's window",
                  lambda: any("hello from bob" in t for t in texts(first)), seconds=10)
        except AssertionError:
            for name, window in [("alice", first), ("bob", second)]:
                print(name, window.execute_script(
                    "return JSON.stringify({socketOpen: state.socketOpen, open: state.open && state.open.id, "
                    "lastSeq: state.open && state.open.lastSeq, pending: state.open && [...state.open.pending.keys()]})"))
            raise
        elapsed = time.monotonic() - sent
        check(elapsed <= 1.0, f"live: bob's message reached alice's window in {elapsed * 1000:.0f} ms")
        until(second, "bob's send acknowledged", lambda: not second.find_elements(By.CSS_SELECTOR, "#messages li.pending"))
        check(sum("hello from bob" in text for text in texts(first)) == 1, "live: shown once")
        g = geometry(first)
        check(abs(g["padding"] - max(g["viewport"] - g["content"], 0)) <= 1, "live: the padding follows the new content")

        # Typing, edits, deletions and read markers arrive live.
        time.sleep(2.1)  # a page announces typing at most every 2 s
        second.find_element(By.ID, "body").send_keys("t")
        until(first, "bob is typing", lambda: first.find_element(By.ID, "typing").text == "bob is typing")
        check(True, "live: alice sees \"bob is typing\"")
        alice.call("PATCH", f"/v1/conversations/{short}/messages/1", {"body": "short message 1, edited"})
        alice.call("DELETE", f"/v1/conversations/{short}/messages/2")
        until(second, "the edit and the deletion in bob's window",
              lambda: any("edited" in t for t in texts(second)) and any("(deleted)" in t for t in texts(second)))
        check(len(texts(second)) == 4, f"live: an edit and a deletion replace their rows ({len(texts(second))} rows)")
        until(first, "bob's read marker", lambda: any("seen by bob" in t for t in texts(first)))
        check(True, "live: bob's read marker shows in alice's window")

        # The server is killed and started again: the page reconnects and
        # resumes from its last seq, with nothing lost or shown twice.
        server.kill()
        until(first, "the page to notice", lambda: first.find_element(By.ID, "connection").text != "")
        server.start()
        for n in range(1, 4):
            bob_api.call("POST", f"/v1/conversations/{short}/messages", {"body": f"after the restart {n}"})
        until(first, "the messages sent after the restart",
              lambda: sum("after the restart" in t for t in texts(first)) >= 3, seconds=30)
        until(first, "the page live again", lambda: first.find_element(By.ID, "connection").text == "")
        shown = first.execute_script("return [...document.querySelectorAll('#messages li')].map(i => Number(i.dataset.seq))")
        check(shown == list(range(1, len(shown) + 1)) and len(shown) == 7,
              f"restart: every message once, in order, seqs {shown}")

        # Replies, threads, reactions and mentions, in a short conversation of
        # their own: alice's window is `first`, bob's `second`.
        open_conversation(first, threads, 2)
        open_conversation(second, threads, 2)
        click(second, '#messages li[data-seq="1"] .reply', "Reply on message 1 in bob's window")
        until(second, "the reply bar", lambda: second.find_element(By.ID, "replying").is_displayed())
        bar = second.find_element(By.ID, "replying").text
        check("alice" in bar and "threads message 1" in bar, f"reply: bob's composer shows what it answers ({bar!r})")
        check_padding(second, "reply: with the reply bar")
        second.find_element(By.ID, "body").clear()  # the "t" of the typing check
        second.find_element(By.ID, "body").send_keys("a reply from bob")
        second.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").click()
        reply = until(first, "bob's reply in alice's window", lambda: (row(first, 3) or {}).get("text") == "a reply from bob" and row(first, 3))
        check(reply["quote"] == ["alice", "threads message 1"],
              f"reply: alice's window shows the reply under a quote of its parent ({reply['quote']!r})")
        check(not second.find_element(By.ID, "replying").is_displayed(), "reply: bob's reply bar closes once sent")
        for name, window in [("alice", first), ("bob", second)]:
            until(window, f"'1 reply' in {name}'s window", lambda: (row(window, 1) or {}).get("replies") == "1 reply")
            check(True, f"thread: the root shows \"1 reply\" live in {name}'s window")

        # The thread opens in a panel, root first, and keeps its replies live.
        click(first, '#messages li[data-seq="1"] .replies', "alice's \"1 reply\"")
        until(first, "the thread panel", lambda: row(first, 3, "#thread-messages"))
        check_padding(first, "thread: with the panel open")
        click(second, '#messages li[data-seq="3"] .reply', "Reply on the reply in bob's window")
        second.find_element(By.ID, "body").send_keys("another reply")
        second.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").click()
        until(first, "the second reply in alice's thread panel", lambda: row(first, 4, "#thread-messages"))
        shown = first.execute_script("return [...document.querySelectorAll('#thread-messages li[data-seq]')].map(i => Number(i.dataset.seq))")
        check(shown == [1, 3, 4], f"thread: the panel shows the root, then the replies oldest first, one arrived live ({shown})")
        until(second, "'2 replies' in bob's window", lambda: (row(second, 1) or {}).get("replies") == "2 replies")
        check(row(first, 1, "#thread-messages")["replies"] == "2 replies", "thread: the panel's root counts 2 replies")
        click(first, "#close-thread", "the thread's close button")
        until(first, "the panel closed", lambda: not first.find_element(By.ID, "thread").is_displayed())

        # Reactions: alice adds 🎉 from the picker, bob adds his by clicking
        # the chip, alice takes hers back by clicking it.
        click(first, '#messages li[data-seq="2"] .add-reaction', "+ on message 2 in alice's window")
        click(first, '#messages li[data-seq="2"] .pick[data-emoji="🎉"]', "🎉 in the picker")
        steps = [
            ("alice reacts", None, [["🎉 1", True]], [["🎉 1", False]]),
            ("bob clicks the chip", second, [["🎉 2", True]], [["🎉 2", True]]),
            ("alice clicks it again", first, [["🎉 1", False]], [["🎉 1", True]]),
        ]
        for what, clicker, alice_sees, bob_sees in steps:
            if clicker:
                click(clicker, '#messages li[data-seq="2"] .reaction', f"the chip ({what})")
            until(first, f"{alice_sees} in alice's window", lambda: reactions(first, 2) == alice_sees)
            until(second, f"{bob_sees} in bob's window", lambda: reactions(second, 2) == bob_sees)
            check(True, f"reactions: {what}: alice sees {alice_sees}, bob {bob_sees} (text, highlighted)")
        check_padding(first, "reactions: a short conversation with a chip")
        check_padding(second, "reactions: the same in bob's window")

        # An edit and a deletion of a parent reach the quotes of its replies.
        alice.call("PATCH", f"/v1/conversations/{threads}/messages/1", {"body": "threads message 1, edited"})
        until(second, "the edited quote", lambda: (row(second, 3) or {}).get("quote") == ["alice", "threads message 1, edited"])
        check(True, "reply: the edit of the parent shows in the reply's quote")
        alice.call("DELETE", f"/v1/conversations/{threads}/messages/1")
        for name, window in [("alice", first), ("bob", second)]:
            until(window, f"the deleted quote in {name}'s window",
                  lambda: (row(window, 3) or {}).get("quote") == ["alice", "deleted message"])
            check(True, f"reply: the deleted parent shows as \"deleted message\" in {name}'s window")

        # Mentions: bob's own is highlighted as his, the others as mentions;
        # "a@bob" is no mention.
        first.find_element(By.ID, "body").send_keys("@bob see @carol. mail a@bob")
        first.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").click()
        mentioned = until(second, "alice's mention in bob's window", lambda: (row(second, 5) or {}).get("mentions"))
        check(mentioned == [["@bob", True], ["@carol", False]],
              f"mentions: bob's window highlights @bob as his and @carol as a mention ({mentioned})")
        mentioned = until(first, "the mention in alice's window", lambda: (row(first, 5) or {}).get("mentions"))
        check(mentioned == [["@bob", False], ["@carol", False]], f"mentions: alice's window, none of them hers ({mentioned})")
        alice.call("POST", f"/v1/conversations/{long}/messages", {"body": "@bob ping"})
        until(second, "the mention marker in bob's inbox",
              lambda: second.find_elements(By.CSS_SELECTOR, f'#conversations li[data-id="{long}"] .mentions'))
        check(True, "mentions: bob's inbox marks the conversation with an unread mention")
        first.save_screenshot(f"{screenshots}/threads.png")
        open_conversation(first, short, 7)

        # Roles and slow mode: in a conversation of alice's with slow mode on,
        # bob (a member) sees alice marked as the owner, and after a message
        # his compose box counts down and takes nothing; the server agrees.
        slow = alice.conversation("slow", ["bob"], 1)
        alice.call("PATCH", f"/v1/conversations/{slow}", {"slow_mode_seconds": 30})
        until(second, "the slow conversation in bob's inbox",
              lambda: second.find_elements(By.CSS_SELECTOR, f'#conversations li[data-id="{slow}"]'))
        open_conversation(second, slow, 1)
        role = second.find_element(By.ID, "role").text
        check(role == "slow mode 30 s", f"slow mode: bob's header shows it ({role!r})")
        until(second, "alice's owner badge", lambda: any("alice (owner)" in t for t in texts(second)))
        check(True, "roles: bob's window marks alice's messages as the owner's")
        second.find_element(By.ID, "body").send_keys("one from bob")
        second.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").click()
        until(second, "bob's message stored", lambda: any("one from bob" in t for t in texts(second))
              and not second.find_elements(By.CSS_SELECTOR, "#messages li.pending"))
        until(second, "the countdown", lambda: second.find_element(By.ID, "slow").text.startswith("slow mode: "))
        countdown = second.find_element(By.ID, "slow").text
        disabled = not second.find_element(By.CSS_SELECTOR, "#compose button[type=submit]").is_enabled()
        check(disabled and countdown in ("slow mode: 30 s", "slow mode: 29 s"),
              f"slow mode: bob's compose box counts down ({countdown!r}) with Send disabled")
        try:
            bob_api.call("POST", f"/v1/conversations/{slow}/messages", {"body": "too soon"})
            check(False, "slow mode: the server took a second message at once")
        except urllib.error.HTTPError as error:
            check(error.code == 429 and error.headers["Retry-After"] is not None,
                  f"slow mode: the server refuses bob's second message with 429, Retry-After {error.headers['Retry-After']}")
        open_conversation(first, slow, 2)
        role = first.find_element(By.ID, "role").text
        check(role == "you are the owner · slow mode 30 s", f"roles: alice's header ({role!r})")
        open_conversation(first, short, 7)

        # Report and block from a message's menu: the row says it was
        # reported (and the server has the report: filing it again answers
        # the first, 200), and once its sender is blocked his messages fold.
        safety = alice.conversation("safety", ["bob"], 0)
        bob_api.call("POST", f"/v1/conversations/{safety}/messages", {"body": "buy cheap watches"})
        until(first, "the safety conversation in alice's inbox",
              lambda: first.find_elements(By.CSS_SELECTOR, f'#conversations li[data-id="{safety}"]'))
        open_conversation(first, safety, 1)
        click(first, '#messages li[data-seq="1"] .more', "the menu of bob's message")
        click(first, '#messages li[data-seq="1"] .report-reason[data-reason="spam"]', "spam in the menu")
        until(first, "'reported' on the row", lambda: first.find_elements(By.CSS_SELECTOR, '#messages li[data-seq="1"] .reported'))
        again = alice.status("POST", "/v1/reports", {"conversation_id": safety, "seq": 1, "reason": "spam"})
        check(again == 200, f"report: alice's report from the menu is on the server (filing it again answers {again})")
        click(first, '#messages li[data-seq="1"] .more', "the menu again")
        click(first, '#messages li[data-seq="1"] .block', "block bob")
        until(first, "bob's message folded", lambda: any("(hidden: you blocked bob)" in t for t in texts(first)))
        blocks = [b["user_id"] for b in alice.call("GET", "/v1/blocks")["blocks"]]
        check(blocks == ["bob"], f"block: bob's message folds in alice's window and the server lists {blocks}")
        refused = bob_api.status("POST", "/v1/conversations", {"members": ["alice"], "distinct": True})
        check(refused == 403, f"block: bob can no longer start a conversation with alice ({refused})")
        alice.call("DELETE", "/v1/blocks/bob")

        # A system message (the operator's, with a server token) arrives
        # live, centered, with no sender and nothing to act on.
        operator = subprocess.check_output([server.binary, "token", "--server", "--name", "browser-test"], env=os.environ, text=True).strip()
        request = urllib.request.Request(url + f"/v1/admin/conversations/{safety}/messages", method="POST",
                                         data=json.dumps({"body": "This conversation is moderated"}).encode())
        request.add_header("Content-Type", "application/json")
        request.add_header("Authorization", "Bearer " + operator)
        with urllib.request.urlopen(request, timeout=30) as response:
            system = json.loads(response.read())["message"]
        until(first, "the system message", lambda: first.find_elements(By.CSS_SELECTOR, f'#messages li.system[data-seq="{system["seq"]}"]'))
        shown = first.execute_script(f"""
            const row = document.querySelector('#messages li[data-seq="{system["seq"]}"]');
            return {{text: row.innerText, sender: row.querySelectorAll('.sender').length, buttons: row.querySelectorAll('button').length,
                    align: getComputedStyle(row).textAlign}};""")
        check(system["kind"] == "system" and shown["text"] == "This conversation is moderated" and shown["sender"] == 0
              and shown["buttons"] == 0 and shown["align"] == "center",
              f"system message: seq {system['seq']} shown centered with no sender and no actions ({shown})")
        open_conversation(first, short, 7)

        # A member added from the page sees the conversation in their inbox.
        first.find_element(By.ID, "add-user").send_keys("carol")
        first.find_element(By.CSS_SELECTOR, "#add-form button").click()
        carol = API(url, "carol")
        until(first, "carol added", lambda: any(c["id"] == short for c in carol.call("GET", "/v1/conversations")["conversations"]))
        check(True, "members: carol, added from alice's page, has the conversation")

        # The server's own words for what it refuses.
        first.find_element(By.ID, "new-members").send_keys("not/a name")
        first.find_element(By.CSS_SELECTOR, "#new-form button").click()
        until(first, "the error", lambda: first.find_element(By.ID, "error").is_displayed())
        message = first.find_element(By.ID, "error").text
        check("must be" in message, f"errors: the server's message is shown ({message!r})")
    finally:
        first.quit()
        if second:
            second.quit()
    photos(url, screenshots)
    profiles(url, server, screenshots)


# Each image's box and the rows' places, read at once, with how many images
# have their bytes: the box of a 'W x H' image must be its pixel size scaled
# down, never up, to the column and 320 px of height, aspect kept.
PHOTOS = """
const viewport = document.getElementById('viewport');
const top = viewport.getBoundingClientRect().top;
return {
  scrollTop: viewport.scrollTop, viewport: viewport.clientHeight, scrollHeight: viewport.scrollHeight,
  rows: [...document.querySelectorAll('#messages li')].map(i => [i.dataset.seq || null, i.getBoundingClientRect().top - top + viewport.scrollTop]),
  seen: [...document.querySelectorAll('#messages li')].flatMap(i => [...i.querySelectorAll(':scope > .time')]
    .filter(t => t.textContent.startsWith('seen by')).map(t => [i.dataset.seq || null, t.textContent])),
  boxes: [...document.querySelectorAll('#messages .attachment.image')].map(b => {
    const r = b.getBoundingClientRect();
    const img = b.querySelector('img');
    return {id: b.dataset.attachment, w: Number(b.dataset.width), h: Number(b.dataset.height), width: r.width,
            height: r.height, column: b.parentElement.clientWidth, loaded: !!(img && img.complete && img.naturalWidth > 0)};
  }),
};
"""


def expected_box(box):
    width = min(box["w"], box["column"], 320 * box["w"] / box["h"])
    return width, width * box["h"] / box["w"]


def check_boxes(what, shot):
    wrong = [(b["w"], b["h"], round(b["width"], 1), round(b["height"], 1), [round(v, 1) for v in expected_box(b)])
             for b in shot["boxes"]
             if abs(b["width"] - expected_box(b)[0]) > 1 or abs(b["height"] - expected_box(b)[1]) > 1]
    check(shot["boxes"] and not wrong,
          f"{what}: {len(shot['boxes'])} image boxes at their final size (pixels scaled down to the column and 320 px)"
          + (f"; wrong: {wrong}" if wrong else ""))


def moved(before, after):
    """Rows whose top moved by more than 1 px between two shots."""
    tops = dict((seq, top) for seq, top in before["rows"])
    return [(seq, round(tops[seq], 1), round(top, 1)) for seq, top in after["rows"]
            if seq in tops and abs(tops[seq] - top) > 1]


def photos(url, screenshots):
    """A conversation of images opens pinned to its newest message, every
    image in its final box before its bytes arrive, and nothing moves when
    they do; a photo sent from one window appears in the other the same way.
    Bob's window gets every answer 1.5 s late (Chromium's network
    emulation), so his images arrive well after his rows are laid out."""
    alice = API(url, "alice")
    conversation = alice.call("POST", "/v1/conversations", {"title": "photos", "members": ["bob"]})["id"]
    sizes = [(1600, 1200), (200, 150), (600, 2000), (1200, 500), (90, 400), (3000, 2000)]
    for n, (w, h) in enumerate(sizes):
        alice.call("POST", f"/v1/conversations/{conversation}/messages", {"body": f"photo {n + 1} next"})
        alice.photo(conversation, f"photo-{n + 1}.png", png(w, h, (40 * n % 255, 120, 200)), body="" if n % 2 else f"{w}x{h}")

    sender = browser(900, 700)
    viewer = browser(900, 700)
    try:
        sign_in(sender, url, "alice")
        sign_in(viewer, url, "bob")
        viewer.execute_cdp_cmd("Network.enable", {})
        viewer.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": False, "latency": 1500, "downloadThroughput": -1, "uploadThroughput": -1})
        viewer.find_element(By.CSS_SELECTOR, f'#conversations li[data-id="{conversation}"]').click()
        until(viewer, "the photos' rows",
              lambda: len(viewer.find_elements(By.CSS_SELECTOR, "#messages .attachment.image")) == len(sizes), seconds=30)
        before = viewer.execute_script(PHOTOS)
        waiting = sum(not b["loaded"] for b in before["boxes"])
        check(waiting == len(sizes), f"photos: laid out before their bytes arrived ({waiting} of {len(sizes)} still loading)")
        check_boxes("photos", before)
        check(abs(before["scrollTop"] + before["viewport"] - before["scrollHeight"]) <= 1,
              "photos: opens pinned to the newest message (a photo)")
        until(viewer, "every image's bytes",
              lambda: all(b["loaded"] for b in viewer.execute_script(PHOTOS)["boxes"]), seconds=60)
        after = viewer.execute_script(PHOTOS)
        check(not moved(before, after) and abs(after["scrollTop"] - before["scrollTop"]) <= 1,
              f"photos: nothing moved when the images arrived (scrollTop {before['scrollTop']} -> {after['scrollTop']}, "
              f"rows moved: {moved(before, after)})")
        check(abs(after["scrollTop"] + after["viewport"] - after["scrollHeight"]) <= 1, "photos: still pinned to the newest")
        viewer.save_screenshot(f"{screenshots}/photos.png")

        # alice sends a photo from her window with the attach button.
        open_conversation(sender, conversation, 2 * len(sizes))
        with tempfile.NamedTemporaryFile(suffix=".png", delete=False) as file:
            file.write(png(1000, 750, (250, 180, 30)))
            path = file.name
        try:
            chooser = sender.find_element(By.ID, "attach-file")
            sender.execute_script("arguments[0].hidden = false", chooser)
            sender.find_element(By.ID, "body").send_keys("from the attach button")
            chooser.send_keys(path)
            count = len(sizes) + 1
            # alice's window marks her photo read, and bob's window moves
            # "seen by alice" from the row before to the photo's: a change
            # of its own, so the shot before the bytes waits for it.
            arrived = until(viewer, "alice's photo in bob's window, seen by her",
                            lambda: (shot := viewer.execute_script(PHOTOS))["seen"][-1:] == [[str(2 * len(sizes) + 1), "seen by alice"]]
                            and len(shot["boxes"]) == count and shot, seconds=30)
            newest = arrived["boxes"][-1]
            check(newest["w"] == 1000 and newest["h"] == 750 and not newest["loaded"],
                  f"live photo: appears in bob's window before its bytes ({newest['w']}x{newest['h']}, loaded: {newest['loaded']})")
            check_boxes("live photo", arrived)
            check(abs(arrived["scrollTop"] + arrived["viewport"] - arrived["scrollHeight"]) <= 1,
                  "live photo: bob's window stays pinned to the newest message")
            until(viewer, "the live photo's bytes", lambda: viewer.execute_script(PHOTOS)["boxes"][-1]["loaded"], seconds=30)
            settled = viewer.execute_script(PHOTOS)
            check(not moved(arrived, settled) and abs(settled["scrollTop"] - arrived["scrollTop"]) <= 1,
                  f"live photo: nothing moved when its bytes arrived (rows moved: {moved(arrived, settled)})")
            mine = until(sender, "alice's own photo, stored",
                         lambda: [b for b in sender.execute_script(PHOTOS)["boxes"] if b["w"] == 1000 and b["loaded"]]
                         and sender.execute_script(PHOTOS))
            check_boxes("live photo in alice's window", mine)
            texts_seen = texts(viewer)
            check(sum("from the attach button" in t for t in texts_seen) == 1, "live photo: its caption, shown once")
        finally:
            os.unlink(path)
    finally:
        sender.quit()
        viewer.quit()


# What the page shows of people, read at once: the rows of the open
# conversation (sender's name, or none in a group's later rows, and the
# avatar: its initials, the image's URL, whether it failed, its size), the
# inbox's rows, the profile button and the title.
PEOPLE = """
const box = (a) => a && {
  initials: a.querySelector('.initials').textContent, src: a.dataset.src || null,
  failed: a.classList.contains('failed'), image: !!a.querySelector('img'),
  width: a.getBoundingClientRect().width, height: a.getBoundingClientRect().height,
  color: a.style.backgroundColor,
};
return {
  rows: [...document.querySelectorAll('#messages li[data-seq]')].map(i => ({
    seq: Number(i.dataset.seq),
    sender: i.querySelector(':scope > .sender') ? i.querySelector(':scope > .sender').firstChild.textContent : null,
    role: i.querySelector(':scope > .sender .role') ? i.querySelector(':scope > .sender .role').textContent : null,
    text: i.querySelector('.text').textContent,
    avatar: box(i.querySelector(':scope > .avatar')),
  })),
  inbox: Object.fromEntries([...document.querySelectorAll('#conversations li')].map(i => [i.dataset.id, {
    name: i.querySelector('.name').firstChild.textContent, preview: i.querySelector('.preview').textContent,
    avatar: box(i.querySelector('.avatar')),
  }])),
  me: document.getElementById('me').textContent,
  meAvatar: box(document.querySelector('#me .avatar')),
  title: document.getElementById('title').textContent,
};
"""


def people(driver):
    return driver.execute_script(PEOPLE)


def senders(driver):
    """seq -> the name a row shows (None: it continues its sender's group)."""
    return {r["seq"]: r["sender"] for r in people(driver)["rows"]}


def profiles(url, server, screenshots):
    """Names and avatars from the users' profiles: emil has a display name,
    finn.k none (his initials come from his id), gus an avatar on the
    operator's CDN that cannot load here (its initials show in its place,
    in a box of the same size). dora names herself with the editor, and a
    rename by emil through the API reaches her open page live."""
    dora = API(url, "dora")
    emil = API(url, "emil")
    finn = API(url, "finn.k")
    gus = API(url, "gus")
    emil.call("PATCH", "/v1/users/me", {"display_name": "Emil Brandt"})
    operator = subprocess.check_output([server.binary, "token", "--server", "--name", "browser-test"], env=os.environ, text=True).strip()
    avatar_url = "https://127.0.0.1:9/avatars/gus.png"  # refused at once: the fallback is what shows
    request = urllib.request.Request(url + "/v1/admin/users/gus/profile", method="PUT", data=json.dumps(
        {"display_name": "Gus Rivera", "avatar": {"url": avatar_url, "width": 64, "height": 64}}).encode())
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", "Bearer " + operator)
    with urllib.request.urlopen(request, timeout=30) as response:
        check(json.loads(response.read())["user"]["avatar"]["url"] == avatar_url, "profiles: the operator set gus's avatar")

    pair = dora.call("POST", "/v1/conversations", {"members": ["emil"], "distinct": True})["id"]
    dora.call("POST", f"/v1/conversations/{pair}/messages", {"body": "hi emil"})
    emil.call("POST", f"/v1/conversations/{pair}/messages", {"body": "hi dora"})
    emil.call("POST", f"/v1/conversations/{pair}/messages", {"body": "how are you?"})
    crew = dora.call("POST", "/v1/conversations", {"title": "crew", "members": ["emil", "finn.k", "gus"]})["id"]
    gus.call("POST", f"/v1/conversations/{crew}/messages", {"body": "gus here"})
    finn.call("POST", f"/v1/conversations/{crew}/messages", {"body": "finn here"})

    mine = browser(900, 700)
    theirs = None
    try:
        sign_in(mine, url, "dora")
        until(mine, "both conversations in dora's inbox", lambda: {pair, crew} <= set(people(mine)["inbox"]))
        inbox = people(mine)["inbox"]
        check(inbox[pair]["name"] == "Emil Brandt" and inbox[pair]["preview"] == "Emil Brandt: how are you?"
              and inbox[pair]["avatar"]["initials"] == "EB",
              f"profiles: the one-to-one's row is named for emil, with his initials ({inbox[pair]})")
        check(inbox[crew]["name"] == "crew" and inbox[crew]["preview"] == "finn.k: finn here"
              and inbox[crew]["avatar"]["initials"] == "FK",
              f"profiles: the group's row shows its last sender, finn.k (no name: his id and its initials) ({inbox[crew]})")
        check(people(mine)["me"] == "Ddora", f"profiles: dora's profile button, before she has a name ({people(mine)['me']!r})")

        # In the one-to-one: names on the first row of each sender's group.
        open_conversation(mine, pair, 3)
        shown = senders(mine)
        check(shown == {1: "dora", 2: "Emil Brandt", 3: None},
              f"profiles: senders by name, emil's second message in his group ({shown})")
        rows = people(mine)["rows"]
        check([r["avatar"] and r["avatar"]["initials"] for r in rows] == ["D", "EB", None],
              f"profiles: initials in the avatars of the groups' first rows ({[r['avatar'] for r in rows]})")
        check(people(mine)["title"] == "Emil Brandt", f"profiles: the one-to-one's title is emil's name ({people(mine)['title']!r})")
        check_padding(mine, "profiles: a conversation with avatars")

        # In the group: finn.k by his id, gus's avatar failed over to his initials.
        open_conversation(mine, crew, 2)
        until(mine, "gus's avatar to fail", lambda: all(r["avatar"]["failed"] for r in people(mine)["rows"] if r["avatar"]["src"]))
        rows = {r["sender"]: r["avatar"] for r in people(mine)["rows"]}
        check(set(rows) == {"Gus Rivera", "finn.k"} and rows["finn.k"]["initials"] == "FK" and rows["finn.k"]["src"] is None,
              f"profiles: finn.k has no name: his id, his id's initials ({rows.get('finn.k')})")
        g = rows.get("Gus Rivera") or {}
        check(g.get("src") == avatar_url and g.get("failed") and not g.get("image") and g.get("initials") == "GR",
              f"profiles: gus's avatar was tried from the operator's URL and, failing, shows his initials ({g})")
        sizes = {(round(a["width"]), round(a["height"])) for a in rows.values()}
        check(sizes == {(32, 32)}, f"profiles: every avatar box is the same 32 px circle, failed or not ({sizes})")
        check(rows["finn.k"]["color"] != g.get("color"), "profiles: each user's initials sit on a color of their own")

        # dora names herself with the editor; a name the server refuses
        # shows its message and changes nothing.
        open_conversation(mine, pair, 3)
        theirs = browser(900, 700)
        sign_in(theirs, url, "emil")
        open_conversation(theirs, pair, 3)
        mine.find_element(By.ID, "me").click()
        field = mine.find_element(By.ID, "display-name")
        field.send_keys("x" * 101)
        mine.find_element(By.CSS_SELECTOR, "#profile-form button[type=submit]").click()
        until(mine, "the editor's error", lambda: mine.find_element(By.ID, "profile-error").text)
        error = mine.find_element(By.ID, "profile-error").text
        check("100" in error and mine.find_element(By.ID, "profile-form").is_displayed() and people(mine)["me"] == "Ddora",
              f"editor: a 101-character name is refused with the server's message ({error!r}), nothing changed")
        field.clear()
        field.send_keys("Dora Marsh")
        mine.find_element(By.CSS_SELECTOR, "#profile-form button[type=submit]").click()
        until(mine, "dora's own row renamed", lambda: senders(mine).get(1) == "Dora Marsh")
        view = people(mine)
        check(view["me"] == "DMDora Marsh" and not mine.find_element(By.ID, "profile-form").is_displayed(),
              f"editor: the profile button shows the new name and initials ({view['me']!r}), the form closed")
        check(view["rows"][0]["avatar"]["initials"] == "DM", f"editor: dora's own message shows DM ({view['rows'][0]['avatar']})")
        check(dora.call("GET", "/v1/users/me")["user"]["display_name"] == "Dora Marsh", "editor: the server has dora's name")
        until(theirs, "dora's rename in emil's window", lambda: senders(theirs).get(1) == "Dora Marsh", seconds=10)
        check(people(theirs)["title"] == "Dora Marsh", "live: dora's rename reaches emil's open page (her row and the title)")

        # emil renames himself through the API: dora's page follows live.
        emil.call("PATCH", "/v1/users/me", {"display_name": "Emil B."})
        renamed = time.monotonic()
        until(mine, "emil's rename in dora's window", lambda: senders(mine).get(2) == "Emil B.", seconds=10)
        elapsed = time.monotonic() - renamed
        view = people(mine)
        check(view["title"] == "Emil B." and view["inbox"][pair]["name"] == "Emil B."
              and view["inbox"][pair]["preview"] == "Emil B.: how are you?" and view["rows"][1]["avatar"]["initials"] == "EB",
              f"live: emil's rename through the API reaches dora's page in {elapsed * 1000:.0f} ms (row, title, inbox)")
        # An older profile arriving late (a lower version) changes nothing.
        version = emil.call("GET", "/v1/users/me")["user"]["version"]
        mine.execute_script("receive({type: 'user_updated', user: {id: 'emil', display_name: 'Stale', avatar: null, version: arguments[0] - 1}})", version)
        time.sleep(0.2)
        check(senders(mine).get(2) == "Emil B.", "live: a profile of a lower version than the one shown is ignored")

        # Clearing the name shows the id again.
        mine.find_element(By.ID, "me").click()
        click(mine, "#clear-name", "Clear in the editor")
        until(mine, "dora's name cleared", lambda: senders(mine).get(1) == "dora")
        check(people(mine)["me"] == "Ddora" and dora.call("GET", "/v1/users/me")["user"]["display_name"] is None,
              "editor: Clear removes the name; her id shows again")

        # dora renames the group through the API: her open header and both
        # inboxes follow live (`conversation_updated`).
        open_conversation(mine, crew, 2)
        dora.call("PATCH", f"/v1/conversations/{crew}", {"title": "lunch crew", "description": "Fridays"})
        until(mine, "the group renamed in dora's header", lambda: people(mine)["title"] == "lunch crew", seconds=10)
        until(theirs, "the group renamed in emil's inbox",
              lambda: people(theirs)["inbox"].get(crew, {}).get("name") == "lunch crew", seconds=10)
        check(people(mine)["inbox"][crew]["name"] == "lunch crew",
              "live: a group renamed through the API shows in its open header and in every inbox")
        mine.save_screenshot(f"{screenshots}/profiles.png")
    finally:
        mine.quit()
        if theirs:
            theirs.quit()


if __name__ == "__main__":
    main()
