// The Scrollback demo client: plain JavaScript on the HTTP API and the live
// stream, as any web app would use them. One window is one user.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  user: null,
  token: null,
  conversations: [],
  open: null, // { id, title, messages: Map seq -> message, pending: Map client_id -> body, lastSeq, hasOlder, loadingOlder }
  socket: null,
  socketOpen: false,
  backoff: 250,
  typingSent: 0,
  typingTimers: new Map(),
  readSeqs: new Map(),
};

// MARK: HTTP

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: Object.assign(
      { "Content-Type": "application/json" },
      state.token ? { Authorization: "Bearer " + state.token } : {}
    ),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const json = text ? JSON.parse(text) : null;
  if (!response.ok) {
    // The server's own words: every error body is {"error": {"code", "message"}}.
    const message = json && json.error ? json.error.message : response.status + " " + response.statusText;
    throw new Error(message);
  }
  return json;
}

function showError(error) {
  const box = $("error");
  box.textContent = error.message || String(error);
  box.hidden = false;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => (box.hidden = true), 6000);
}

// MARK: Signing in

$("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    const answer = await api("POST", "/demo/token", { user: $("user").value.trim() });
    start(answer.user, answer.token);
  } catch (error) {
    showError(error);
  }
});

function start(user, token) {
  state.user = user;
  state.token = token;
  sessionStorage.setItem("scrollback.user", user);
  sessionStorage.setItem("scrollback.token", token);
  $("signin").hidden = true;
  $("app").hidden = false;
  $("me").textContent = user;
  loadInbox();
  connect();
}

// MARK: The inbox

async function loadInbox() {
  try {
    const list = await api("GET", "/v1/conversations?limit=50");
    state.conversations = list.conversations;
    renderInbox();
  } catch (error) {
    showError(error);
  }
}

let inboxReload = null;
function reloadInboxSoon() {
  clearTimeout(inboxReload);
  inboxReload = setTimeout(loadInbox, 100);
}

function nameOf(conversation) {
  return conversation.title || conversation.members.filter((m) => m !== state.user).join(", ") || conversation.members.join(", ");
}

function renderInbox() {
  const list = $("conversations");
  list.replaceChildren();
  for (const conversation of state.conversations) {
    const item = document.createElement("li");
    item.dataset.id = conversation.id;
    if (state.open && state.open.id === conversation.id) item.className = "open";
    const name = document.createElement("div");
    name.className = "name";
    name.textContent = nameOf(conversation);
    if (conversation.unread_count > 0 && !(state.open && state.open.id === conversation.id)) {
      const unread = document.createElement("span");
      unread.className = "unread";
      unread.textContent = conversation.unread_count;
      name.append(unread);
    }
    const preview = document.createElement("div");
    preview.className = "preview";
    const last = conversation.last_message;
    preview.textContent = last ? last.sender + ": " + (last.deleted ? "(deleted)" : last.body) : "no messages yet";
    item.append(name, preview);
    item.addEventListener("click", () => openConversation(conversation));
    list.append(item);
  }
}

$("new-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const members = $("new-members").value.split(",").map((m) => m.trim()).filter((m) => m);
  const title = $("new-title").value.trim();
  try {
    const conversation = await api("POST", "/v1/conversations", title ? { members, title } : { members });
    $("new-members").value = "";
    $("new-title").value = "";
    await loadInbox();
    openConversation(conversation);
  } catch (error) {
    showError(error);
  }
});

// MARK: A conversation

async function openConversation(conversation) {
  if (state.open && state.socketOpen) send({ type: "unsubscribe", conversation_id: state.open.id });
  state.open = {
    id: conversation.id,
    messages: new Map(),
    pending: new Map(),
    lastSeq: 0,
    hasOlder: false,
    loadingOlder: false,
  };
  state.readSeqs = new Map();
  $("conversation").hidden = false;
  $("title").textContent = nameOf(conversation);
  $("typing").textContent = "";
  renderInbox();
  try {
    const page = await api("GET", `/v1/conversations/${conversation.id}/messages?limit=50`);
    if (!state.open || state.open.id !== conversation.id) return;
    for (const message of page.messages) state.open.messages.set(message.seq, message);
    state.open.lastSeq = Math.max(state.open.lastSeq, page.last_seq);
    state.open.hasOlder = page.has_older;
    render({ pin: true });
    subscribe();
    markRead();
  } catch (error) {
    showError(error);
  }
}

function subscribe() {
  if (!state.open || !state.socketOpen) return;
  send({ type: "subscribe", conversation_id: state.open.id, after_seq: state.open.lastSeq });
}

/// Renders the open conversation: oldest first, pending sends after the
/// stored messages, then the bottom padding of the layout rule:
/// max(viewport height - content height, 0), so a short conversation sits
/// at the top and the newest message is always the last thing.
function render({ pin = false, keep = null } = {}) {
  const open = state.open;
  const viewport = $("viewport");
  const wasAtBottom = viewport.scrollHeight - viewport.scrollTop - viewport.clientHeight < 4;
  const list = $("messages");
  list.replaceChildren();
  const seqs = [...open.messages.keys()].sort((a, b) => a - b);
  for (const seq of seqs) list.append(messageItem(open.messages.get(seq)));
  for (const [clientId, body] of open.pending) {
    list.append(messageItem({ seq: null, sender: state.user, body, client_id: clientId, pending: true }));
  }
  $("older").textContent = open.hasOlder ? (open.loadingOlder ? "loading earlier messages…" : "") : "start of the conversation";
  applyPadding();
  if (keep) {
    // The message under the reader's eye stays where it was.
    const item = list.querySelector(`[data-seq="${keep.seq}"]`);
    if (item) viewport.scrollTop = item.offsetTop - keep.offset;
  } else if (pin || wasAtBottom) {
    viewport.scrollTop = viewport.scrollHeight;
  }
}

function applyPadding() {
  const viewport = $("viewport");
  const content = $("older").offsetHeight + $("messages").offsetHeight;
  $("padding").style.height = Math.max(viewport.clientHeight - content, 0) + "px";
}

function messageItem(message) {
  const item = document.createElement("li");
  if (message.seq !== null) item.dataset.seq = message.seq;
  if (message.client_id) item.dataset.clientId = message.client_id;
  if (message.pending) item.className = "pending";
  if (message.deleted) item.className = "deleted";
  const sender = document.createElement("span");
  sender.className = "sender";
  sender.textContent = message.sender;
  const text = document.createElement("span");
  text.className = "text";
  text.textContent = message.deleted ? "(deleted)" : message.body;
  item.append(sender, text);
  if (message.edited_at && !message.deleted) {
    const edited = document.createElement("span");
    edited.className = "edited";
    edited.textContent = "(edited)";
    item.append(edited);
  }
  const readers = [...state.readSeqs].filter(([user, seq]) => user !== state.user && seq === message.seq).map(([user]) => user);
  if (readers.length) {
    const seen = document.createElement("span");
    seen.className = "time";
    seen.textContent = "seen by " + readers.join(", ");
    item.append(seen);
  }
  return item;
}

$("viewport").addEventListener("scroll", () => {
  const open = state.open;
  if (open && open.hasOlder && !open.loadingOlder && $("viewport").scrollTop < 200) loadOlder();
  if (open && atBottom()) markRead();
});

function atBottom() {
  const viewport = $("viewport");
  return viewport.scrollHeight - viewport.scrollTop - viewport.clientHeight < 4;
}

async function loadOlder() {
  const open = state.open;
  const oldest = Math.min(...open.messages.keys());
  open.loadingOlder = true;
  // The first message in view, and how far below the top of the viewport it is.
  const viewport = $("viewport");
  const first = [...$("messages").children].find((item) => item.offsetTop + item.offsetHeight > viewport.scrollTop);
  const keep = first && first.dataset.seq ? { seq: first.dataset.seq, offset: first.offsetTop - viewport.scrollTop } : null;
  try {
    const page = await api("GET", `/v1/conversations/${open.id}/messages?before=${oldest}&limit=50`);
    if (state.open !== open) return;
    for (const message of page.messages) if (!open.messages.has(message.seq)) open.messages.set(message.seq, message);
    open.hasOlder = page.has_older;
  } catch (error) {
    showError(error);
  } finally {
    open.loadingOlder = false;
  }
  if (state.open === open) render({ keep });
}

function markRead() {
  const open = state.open;
  if (!open || !open.lastSeq || open.readSent >= open.lastSeq || !state.socketOpen) return;
  open.readSent = open.lastSeq;
  send({ type: "read", conversation_id: open.id, seq: open.lastSeq });
}

$("compose").addEventListener("submit", (event) => {
  event.preventDefault();
  const body = $("body").value;
  if (!body.trim() || !state.open) return;
  $("body").value = "";
  const clientId = crypto.randomUUID();
  state.open.pending.set(clientId, body);
  render({ pin: true });
  deliver(state.open, clientId, body);
});

/// Sends over the socket when it is open (answered by `ack`), otherwise
/// over HTTP; the same client_id makes a retry store it once.
async function deliver(open, clientId, body) {
  if (state.socketOpen) {
    send({ type: "send", conversation_id: open.id, body, client_id: clientId });
    return;
  }
  try {
    const answer = await api("POST", `/v1/conversations/${open.id}/messages`, { body, client_id: clientId });
    acknowledged(open, clientId, answer.message);
  } catch (error) {
    showError(error);
    setTimeout(() => open.pending.has(clientId) && deliver(open, clientId, body), 2000);
  }
}

function acknowledged(open, clientId, message) {
  open.pending.delete(clientId);
  stored(open, message);
}

function stored(open, message) {
  const known = open.messages.get(message.seq);
  if (!known || known.version < message.version) open.messages.set(message.seq, message);
  open.lastSeq = Math.max(open.lastSeq, message.seq);
  if (message.client_id) open.pending.delete(message.client_id);
  if (state.open === open) {
    render();
    if (atBottom()) markRead();
  }
}

$("add-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const user = $("add-user").value.trim();
  if (!user || !state.open) return;
  try {
    const conversation = await api("POST", `/v1/conversations/${state.open.id}/members`, { user_id: user });
    $("add-user").value = "";
    $("title").textContent = nameOf(conversation);
    reloadInboxSoon();
  } catch (error) {
    showError(error);
  }
});

$("body").addEventListener("input", () => {
  if (!state.open || !state.socketOpen || Date.now() - state.typingSent < 2000) return;
  state.typingSent = Date.now();
  send({ type: "typing", conversation_id: state.open.id });
});

// MARK: The live stream

function connect() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/v1/stream";
  const socket = new WebSocket(url);
  state.socket = socket;
  socket.addEventListener("open", () => {
    socket.send(JSON.stringify({ type: "auth", token: state.token }));
    socket.send(JSON.stringify({ type: "subscribe_inbox" }));
    state.socketOpen = true;
    state.backoff = 250;
    $("connection").textContent = "";
    subscribe();
    if (state.open) {
      // What was sent while away and not acknowledged goes again (same client_id).
      for (const [clientId, body] of state.open.pending) deliver(state.open, clientId, body);
    }
  });
  socket.addEventListener("message", (event) => receive(JSON.parse(event.data)));
  socket.addEventListener("close", () => {
    if (state.socket !== socket) return;
    state.socketOpen = false;
    $("connection").textContent = "reconnecting…";
    setTimeout(connect, state.backoff);
    state.backoff = Math.min(state.backoff * 2, 5000);
  });
}

function send(frame) {
  if (state.socket && state.socketOpen) state.socket.send(JSON.stringify(frame));
}

function receive(frame) {
  const open = state.open;
  const here = open && frame.conversation_id === open.id;
  switch (frame.type) {
    case "message":
    case "message_updated":
      if (open && frame.message.conversation_id === open.id) stored(open, frame.message);
      break;
    case "ack":
      if (open) acknowledged(open, frame.client_id, frame.message);
      break;
    case "typing":
      if (here) showTyping(frame.user_id);
      break;
    case "read":
      if (frame.cursor !== undefined) {
        reloadInboxSoon(); // the inbox's own read marker
      } else if (here) {
        state.readSeqs.set(frame.user_id, frame.seq);
        render();
      }
      break;
    case "resync_required":
      if (frame.cursor !== undefined) reloadInboxSoon();
      else if (here) openConversation(state.conversations.find((c) => c.id === open.id) || { id: open.id, members: [] });
      break;
    case "conversation_activity":
    case "member_added":
    case "member_removed":
      reloadInboxSoon();
      if (frame.type === "member_removed" && here && frame.cursor === undefined) {
        showError(new Error("You are no longer a member of this conversation."));
      }
      break;
    case "error":
      showError(new Error(frame.message));
      break;
  }
}

function showTyping(user) {
  clearTimeout(state.typingTimers.get(user));
  state.typingTimers.set(user, setTimeout(() => {
    state.typingTimers.delete(user);
    updateTyping();
  }, 3000));
  updateTyping();
}

function updateTyping() {
  const users = [...state.typingTimers.keys()];
  $("typing").textContent = users.length ? users.join(", ") + (users.length > 1 ? " are typing" : " is typing") : "";
}

window.addEventListener("resize", () => state.open && applyPadding());

// A reload keeps the user of this window.
const savedUser = sessionStorage.getItem("scrollback.user");
const savedToken = sessionStorage.getItem("scrollback.token");
if (savedUser && savedToken) start(savedUser, savedToken);
