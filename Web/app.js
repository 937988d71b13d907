// The Scrollback demo client: plain JavaScript on the HTTP API and the live
// stream, as any web app would use them. One window is one user.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  user: null,
  token: null,
  conversations: [],
  // { id, title, messages: Map seq -> message, pending: Map client_id -> { body, replyTo },
  //   lastSeq, hasOlder, loadingOlder, replyTo: seq or null, picker: seq or null,
  //   thread: null or { root: seq, rootMessage, messages: Map seq -> reply, hasOlder } }
  open: null,
  socket: null,
  socketOpen: false,
  backoff: 250,
  typingSent: 0,
  typingTimers: new Map(),
  readSeqs: new Map(),
  // The open conversation's members: user id -> { online, last_seen_at },
  // and the users a presence frame told of since the last read began.
  presence: new Map(),
  presenceFramed: new Set(),
  // The open conversation's members' roles (user id -> owner, admin,
  // member), and when slow mode lets this user send again (ms, 0: now).
  roles: new Map(),
  slowUntil: 0,
  // Every profile this window has seen (user id -> {id, display_name,
  // avatar, version}), from the `users` of each answer and the
  // `user_updated` frames; of two, the higher version stays.
  profiles: new Map(),
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
    const error = new Error(message);
    error.code = json && json.error ? json.error.code : null;
    error.retryAfter = Number(response.headers.get("Retry-After")) || 0;
    throw error;
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
  renderMe();
  loadMe();
  loadInbox();
  connect();
}

// MARK: Profiles

/// Keeps `profile` unless a newer one (a higher version) is known already;
/// true when it changed what this window shows.
function learnProfile(profile) {
  if (!profile || !profile.id) return false;
  const known = state.profiles.get(profile.id);
  if (known && known.version >= profile.version) return false;
  state.profiles.set(profile.id, profile);
  return true;
}

/// The `users` of an answer: an object keyed by user id, or a list.
function learnUsers(users) {
  let changed = false;
  for (const profile of Object.values(users || {})) changed = learnProfile(profile) || changed;
  return changed;
}

/// What a user is called: their display name, else their id.
function displayName(id) {
  const profile = state.profiles.get(id);
  return (profile && profile.display_name) || id;
}

/// The first letters of up to two words of the display name (else of the id).
function initialsOf(id) {
  const profile = state.profiles.get(id);
  const words = ((profile && profile.display_name) || id).split(/[\s._@-]+/u).filter((word) => word);
  const letters = words.slice(0, 2).map((word) => [...word][0]).join("");
  return (letters || [...id][0] || "?").toUpperCase();
}

/// A color of the user's own: a hue from a hash of the id, the same in
/// every window and on every load.
function colorOf(id) {
  let hash = 0x811c9dc5; // FNV-1a, then a final mix so that ids alike get hues apart
  for (const char of id) hash = Math.imul(hash ^ char.codePointAt(0), 0x01000193);
  hash = Math.imul(hash ^ (hash >>> 15), 0x2c1b3c6d);
  hash = (hash ^ (hash >>> 12)) >>> 0;
  return `hsl(${hash % 360}, 45%, 42%)`;
}

/// Avatar URLs that did not load: their box shows the initials from then on.
const failedAvatars = new Set();
/// Avatar paths on this server -> a promise of an object URL of their bytes
/// (fetched with the token, which an <img> cannot send).
const avatarURLs = new Map();

function avatarSource(url) {
  if (/^https:\/\//i.test(url)) return Promise.resolve(url); // the operator's CDN
  let source = avatarURLs.get(url);
  if (!source) {
    source = fetch(url, { headers: { Authorization: "Bearer " + state.token } })
      .then((response) => {
        if (!response.ok) throw new Error("avatar: " + response.status);
        return response.blob();
      })
      .then((blob) => URL.createObjectURL(blob));
    avatarURLs.set(url, source);
  }
  return source;
}

/// A user's avatar: a circle of a fixed size, so nothing moves when the
/// image arrives, holding their initials on their color; the image covers
/// them once it loads, and one that fails leaves the initials.
function avatar(id) {
  const box = document.createElement("span");
  box.className = "avatar";
  box.dataset.user = id;
  box.style.backgroundColor = colorOf(id);
  box.title = displayName(id);
  const initials = document.createElement("span");
  initials.className = "initials";
  initials.textContent = initialsOf(id);
  box.append(initials);
  const profile = state.profiles.get(id);
  const url = profile && profile.avatar && profile.avatar.url;
  if (!url) return box;
  box.dataset.src = url;
  if (failedAvatars.has(url)) {
    box.classList.add("failed");
    return box;
  }
  const image = document.createElement("img");
  image.alt = "";
  const fail = () => {
    failedAvatars.add(url);
    image.remove();
    box.classList.add("failed");
  };
  image.addEventListener("load", () => box.classList.add("loaded"));
  image.addEventListener("error", fail);
  box.append(image);
  avatarSource(url).then((source) => { image.src = source; }).catch(fail);
  return box;
}

/// Asks the server for the profiles of users this window has not seen
/// (a live message's sender, a member just added), a hundred at a time.
const profilesAsked = new Set();
async function ensureProfiles(ids) {
  const missing = [...new Set(ids)].filter((id) => id && !state.profiles.has(id) && !profilesAsked.has(id));
  for (let i = 0; i < missing.length; i += 100) {
    const batch = missing.slice(i, i + 100);
    for (const id of batch) profilesAsked.add(id);
    try {
      const answer = await api("GET", "/v1/users?ids=" + batch.map((id) => encodeURIComponent(id.replace(/\\/g, "\\\\").replace(/,/g, "\\,"))).join(","));
      if (learnUsers(answer.users)) profilesChanged();
    } catch (error) {
      // Someone this user shares no conversation with any more: shown by id.
    }
  }
}

/// Draws again what shows names and avatars.
function profilesChanged() {
  renderMe();
  renderInbox();
  if (state.open) {
    $("title").textContent = titleOf(state.conversations.find((c) => c.id === state.open.id) || state.open.conversation);
    render();
    renderThread();
    renderReplying();
    renderPresence();
    updateTyping();
  }
}

// MARK: Your profile

/// The button in the inbox's header: your avatar and name.
function renderMe() {
  const me = $("me");
  me.replaceChildren(avatar(state.user), nameSpan(state.user));
}

function nameSpan(id) {
  const name = document.createElement("span");
  name.className = "display-name";
  name.textContent = displayName(id);
  return name;
}

$("me").addEventListener("click", () => {
  const form = $("profile-form");
  if (!form.hidden) return closeProfile();
  const profile = state.profiles.get(state.user);
  $("display-name").value = (profile && profile.display_name) || "";
  $("profile-error").textContent = "";
  form.hidden = false;
  $("display-name").focus();
});

function closeProfile() {
  $("profile-form").hidden = true;
  $("profile-error").textContent = "";
}

async function saveProfile(displayName) {
  $("profile-error").textContent = "";
  try {
    const answer = await api("PATCH", "/v1/users/me", { display_name: displayName });
    closeProfile();
    if (learnProfile(answer.user)) profilesChanged();
  } catch (error) {
    // The server says what to fix (a 422's message), beside the field.
    $("profile-error").textContent = error.message;
  }
}

$("profile-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = $("display-name").value;
  saveProfile(name === "" ? null : name); // an empty field clears the name
});
$("clear-name").addEventListener("click", () => saveProfile(null));
$("cancel-profile").addEventListener("click", closeProfile);
$("display-name").addEventListener("keydown", (event) => {
  if (event.key === "Escape") closeProfile();
});

async function loadMe() {
  try {
    const answer = await api("GET", "/v1/users/me");
    if (learnProfile(answer.user)) profilesChanged();
  } catch (error) {
    showError(error);
  }
}

// MARK: The inbox

async function loadInbox() {
  try {
    const list = await api("GET", "/v1/conversations?limit=50");
    state.conversations = list.conversations;
    learnUsers(list.users);
    renderInbox();
    renderMe();
  } catch (error) {
    showError(error);
  }
}

let inboxReload = null;
function reloadInboxSoon() {
  clearTimeout(inboxReload);
  inboxReload = setTimeout(loadInbox, 100);
}

/// The other member of a one-to-one conversation (two members, no title).
function peerOf(conversation) {
  if (conversation.title || !conversation.members) return null;
  const others = conversation.members.filter((m) => m !== state.user);
  return conversation.members.length === 2 && others.length === 1 ? others[0] : null;
}

/// A conversation's title, else its other members' names.
function titleOf(conversation) {
  if (!conversation) return "";
  const members = conversation.members || [];
  const others = members.filter((m) => m !== state.user);
  return conversation.title || (others.length ? others : members).map(displayName).join(", ");
}

/// The avatar of a conversation's row: the peer of a one-to-one, else the
/// last message's sender, else the title's initials on the conversation's color.
function rowAvatar(conversation) {
  const peer = peerOf(conversation);
  if (peer) return avatar(peer);
  const last = conversation.last_message;
  if (last && last.kind !== "system" && last.sender) return avatar(last.sender);
  const box = document.createElement("span");
  box.className = "avatar group";
  box.style.backgroundColor = colorOf(conversation.id);
  const initials = document.createElement("span");
  initials.className = "initials";
  const words = titleOf(conversation).split(/[\s,]+/u).filter((word) => word);
  initials.textContent = (words.slice(0, 2).map((word) => [...word][0]).join("") || "#").toUpperCase();
  box.append(initials);
  return box;
}

function renderInbox() {
  ensureProfiles(state.conversations.flatMap((c) => [peerOf(c), c.last_message && c.last_message.sender]));
  const list = $("conversations");
  list.replaceChildren();
  for (const conversation of state.conversations) {
    const item = document.createElement("li");
    item.dataset.id = conversation.id;
    if (state.open && state.open.id === conversation.id) item.className = "open";
    const name = document.createElement("div");
    name.className = "name";
    name.textContent = titleOf(conversation);
    if (conversation.unread_count > 0 && !(state.open && state.open.id === conversation.id)) {
      const unread = document.createElement("span");
      unread.className = "unread";
      unread.textContent = conversation.unread_count;
      name.append(unread);
      if (conversation.unread_mentions > 0) {
        const mentions = document.createElement("span");
        mentions.className = "unread mentions";
        mentions.title = conversation.unread_mentions + " unread mention" + (conversation.unread_mentions > 1 ? "s" : "");
        mentions.textContent = "@";
        name.append(mentions);
      }
    }
    const preview = document.createElement("div");
    preview.className = "preview";
    const last = conversation.last_message;
    const shown = (message) => message.deleted ? "(deleted)"
      : message.body || (message.attachments && message.attachments.length ? "📎 " + message.attachments[0].filename : "");
    preview.textContent = !last ? "no messages yet" : last.kind === "system" ? shown(last) : displayName(last.sender) + ": " + shown(last);
    const summary = document.createElement("div");
    summary.className = "summary";
    summary.append(name, preview);
    item.append(rowAvatar(conversation), summary);
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
    conversation,
    role: conversation.role || "member",
    slowMode: conversation.slow_mode_seconds || 0,
    messages: new Map(),
    pending: new Map(),
    lastSeq: 0,
    hasOlder: false,
    loadingOlder: false,
    replyTo: null,
    picker: null,
    menu: null,
    revealed: new Set(),
    reported: new Set(),
    thread: null,
  };
  state.readSeqs = new Map();
  state.presence = new Map();
  state.roles = new Map();
  state.slowUntil = 0;
  renderPresence();
  renderRole();
  loadRoles(conversation.id);
  renderReplying();
  renderThread();
  $("conversation").hidden = false;
  $("title").textContent = titleOf(conversation);
  $("typing").textContent = "";
  renderInbox();
  try {
    const page = await api("GET", `/v1/conversations/${conversation.id}/messages?limit=50`);
    if (!state.open || state.open.id !== conversation.id) return;
    learnUsers(page.users);
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
  send({ type: "subscribe", conversation_id: state.open.id, after_seq: state.open.lastSeq, presence: true });
}

/// Everyone's role, for the badges beside senders' names.
async function loadRoles(id) {
  try {
    const list = await api("GET", `/v1/conversations/${id}/members`);
    if (!state.open || state.open.id !== id) return;
    state.roles = new Map(list.members.map((member) => [member.user_id, member.role]));
    if (learnUsers(list.users)) profilesChanged();
    else render();
  } catch (error) {
    showError(error);
  }
}

/// The caller's role and slow mode, in the header.
function renderRole() {
  const open = state.open;
  const parts = [];
  if (open && open.role !== "member") parts.push("you are " + (open.role === "owner" ? "the owner" : "an admin"));
  if (open && open.slowMode > 0) parts.push(`slow mode ${open.slowMode} s`);
  $("role").textContent = parts.join(" · ");
}

/// Slow mode holds this user back for `seconds`: the compose box counts
/// them down and takes nothing until then.
function slowDown(seconds) {
  state.slowUntil = Date.now() + seconds * 1000;
  tickSlowMode();
}

function tickSlowMode() {
  clearTimeout(tickSlowMode.timer);
  const left = Math.ceil((state.slowUntil - Date.now()) / 1000);
  const button = $("compose").querySelector("button[type=submit]");
  if (left > 0) {
    button.disabled = true;
    $("slow").textContent = `slow mode: ${left} s`;
    tickSlowMode.timer = setTimeout(tickSlowMode, 250);
  } else {
    button.disabled = false;
    $("slow").textContent = "";
  }
}

/// Reads where the members stand once the subscription is live; presence
/// frames keep it current, and one that arrives meanwhile is newer.
async function readPresence(id) {
  state.presenceFramed = new Set();
  try {
    const read = await api("GET", `/v1/conversations/${id}/presence`);
    if (!state.open || state.open.id !== id) return;
    for (const member of read.members) {
      if (!state.presenceFramed.has(member.user_id)) state.presence.set(member.user_id, member);
    }
    renderPresence();
  } catch (error) {
    showError(error);
  }
}

/// "bob online", or "bob seen 14:02", for the other members.
function renderPresence() {
  const others = [...state.presence.values()].filter((m) => m.user_id !== state.user);
  others.sort((a, b) => (a.user_id < b.user_id ? -1 : 1));
  $("presence").textContent = others
    .map((m) => m.online ? `${displayName(m.user_id)} online`
      : m.last_seen_at ? `${displayName(m.user_id)} seen ${new Date(m.last_seen_at).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`
      : null)
    .filter(Boolean)
    .join(" · ");
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
  let previous = null;
  for (const seq of seqs) {
    const message = open.messages.get(seq);
    list.append(messageItem(message, previous));
    previous = message;
  }
  for (const [clientId, { body, replyTo, attachments }] of open.pending) {
    const parent = replyTo ? findMessage(open, replyTo) : null;
    const message = {
      seq: null, sender: state.user, body, client_id: clientId, pending: true,
      reply_to: parent ? replyPreview(parent) : undefined, attachments,
    };
    list.append(messageItem(message, previous));
    previous = message;
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

/// Keeps the newest message in view across a change of the viewport's size
/// or of the rows' heights (the reply bar, the thread panel), when the reader
/// was at the bottom before it.
function keepingBottom(change) {
  const stick = state.open && atBottom();
  change();
  if (!state.open) return;
  applyPadding();
  if (stick) $("viewport").scrollTop = $("viewport").scrollHeight;
}

// Rows whose height changes after they are laid out (a line that wraps
// again once the thread panel narrows the list) move the padding too.
if (window.ResizeObserver) {
  const observer = new ResizeObserver(() => state.open && applyPadding());
  observer.observe($("messages"));
  observer.observe($("viewport"));
}

const EMOJIS = ["👍", "❤️", "😂", "🎉", "😮"];

/// Messages within this long of the one before, from the same sender, join
/// its group: no avatar or name of their own.
const GROUP_GAP_MS = 5 * 60 * 1000;

function continuesGroup(previous, message) {
  if (!previous || previous.kind === "system" || message.kind === "system" || previous.sender !== message.sender) return false;
  const at = (m) => (m.created_at ? Date.parse(m.created_at) : Date.now());
  return at(message) - at(previous) <= GROUP_GAP_MS;
}

function messageItem(message, previous = null) {
  const item = document.createElement("li");
  if (message.seq !== null) item.dataset.seq = message.seq;
  if (message.client_id) item.dataset.clientId = message.client_id;
  if (message.pending) item.className = "pending";
  if (message.deleted) item.className = "deleted";
  if (message.kind === "system") {
    // The operator's notice: no sender, no bubble, nothing to do with it.
    item.className = "system";
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = message.deleted ? "(deleted)" : message.body;
    item.append(text);
    return item;
  }
  const grouped = continuesGroup(previous, message);
  item.classList.add(grouped ? "grouped" : "first");
  if (!grouped) item.append(avatar(message.sender));
  if (message.reply_to) item.append(quote(message.reply_to));
  if (message.seq !== null && !message.deleted) item.append(actions(message));
  const sender = document.createElement("span");
  sender.className = "sender";
  sender.dataset.user = message.sender;
  const role = state.roles.get(message.sender);
  sender.append(displayName(message.sender));
  if (role && role !== "member") {
    const badge = document.createElement("span");
    badge.className = "role";
    badge.textContent = ` (${role})`;
    sender.append(badge);
  }
  const text = document.createElement("span");
  text.className = "text";
  const folded = message.blocked_sender && !state.open.revealed.has(message.seq);
  if (message.deleted) text.textContent = "(deleted)";
  else if (folded) text.textContent = `(hidden: you blocked ${displayName(message.sender)})`;
  else text.append(...withMentions(message.body, message.sender));
  if (!grouped) item.append(sender);
  item.append(text);
  if (folded && !message.deleted) {
    item.classList.add("blocked");
    item.append(button("reveal", "show", () => {
      state.open.revealed.add(message.seq);
      render();
    }));
  }
  if (message.seq !== null && state.open.reported.has(message.seq)) {
    const note = document.createElement("span");
    note.className = "time reported";
    note.textContent = "reported";
    item.append(note);
  }
  if (!message.deleted && message.attachments && message.attachments.length) item.append(attachmentsOf(message));
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
    seen.textContent = "seen by " + readers.map(displayName).join(", ");
    item.append(seen);
  }
  const footer = document.createElement("div");
  footer.className = "footer";
  if (message.thread && message.thread.reply_count > 0) {
    const count = message.thread.reply_count;
    footer.append(button("replies", count + (count === 1 ? " reply" : " replies"), () => openThread(message.seq)));
  }
  for (const reaction of message.reactions || []) {
    const chip = button("reaction" + (reaction.me ? " me" : ""), reaction.emoji + " " + reaction.count,
      () => react(message.seq, reaction.emoji, !reaction.me));
    chip.dataset.emoji = reaction.emoji;
    chip.dataset.count = reaction.count;
    chip.title = reaction.me ? "remove your " + reaction.emoji : "react with " + reaction.emoji;
    footer.append(chip);
  }
  if (footer.childElementCount) item.append(footer);
  return item;
}

// MARK: Attachments

/// The tallest an image is shown, as in the layout library's box model.
const MAX_IMAGE_HEIGHT = 320;

/// A message's images and files. An image's box has its final size from
/// its recorded pixel size (the CSS below scales it down, never up, to the
/// column and MAX_IMAGE_HEIGHT, keeping its aspect), so its bytes arriving
/// later change no height.
function attachmentsOf(message) {
  const list = document.createElement("div");
  list.className = "attachments";
  for (const attachment of message.attachments) {
    if ((attachment.kind === "image" || attachment.kind === "video") && attachment.width && attachment.height) {
      const box = document.createElement("div");
      box.className = "attachment image";
      box.dataset.attachment = attachment.id;
      box.dataset.width = attachment.width;
      box.dataset.height = attachment.height;
      const widest = (MAX_IMAGE_HEIGHT * attachment.width) / attachment.height;
      box.style.width = `min(${attachment.width}px, 100%, ${widest}px)`;
      box.style.aspectRatio = `${attachment.width} / ${attachment.height}`;
      box.title = attachment.filename;
      if (attachment.kind === "image") {
        const image = document.createElement("img");
        image.alt = attachment.filename;
        box.append(image);
        showImage(attachment, image);
      }
      list.append(box);
    } else {
      const file = button("attachment file", "📄 " + attachment.filename + " · " + sizeText(attachment.size),
        () => downloadFile(attachment));
      file.dataset.attachment = attachment.id;
      list.append(file);
    }
  }
  return list;
}

function sizeText(bytes) {
  if (bytes < 1024) return bytes + " B";
  if (bytes < 1024 * 1024) return (bytes / 1024).toFixed(1) + " KB";
  return (bytes / 1024 / 1024).toFixed(1) + " MB";
}

/// Attachment id -> a promise of an object URL of its bytes: each is
/// downloaded once (with the token: an <img> cannot send one), and a photo
/// this window sent is shown from the file it picked.
const attachmentURLs = new Map();

function attachmentURL(attachment) {
  let url = attachmentURLs.get(attachment.id);
  if (!url) {
    url = fetch(attachment.url, { headers: { Authorization: "Bearer " + state.token } })
      .then((response) => {
        if (!response.ok) throw new Error(attachment.filename + ": " + response.status);
        return response.blob();
      })
      .then((blob) => URL.createObjectURL(blob));
    url.catch(() => attachmentURLs.delete(attachment.id));
    attachmentURLs.set(attachment.id, url);
  }
  return url;
}

function showImage(attachment, image) {
  attachmentURL(attachment).then((url) => { image.src = url; }).catch(() => {});
}

async function downloadFile(attachment) {
  try {
    const link = document.createElement("a");
    link.href = await attachmentURL(attachment);
    link.download = attachment.filename;
    link.click();
  } catch (error) {
    showError(error);
  }
}

$("attach").addEventListener("click", () => state.open && $("attach-file").click());
$("attach-file").addEventListener("change", async () => {
  const file = $("attach-file").files[0];
  $("attach-file").value = "";
  if (!file || !state.open) return;
  const open = state.open;
  try {
    const attachment = await uploadFile(open, file);
    attachmentURLs.set(attachment.id, Promise.resolve(URL.createObjectURL(file)));
    const body = $("body").value;
    $("body").value = "";
    const clientId = crypto.randomUUID();
    open.pending.set(clientId, { body, replyTo: open.replyTo, attachments: [attachment] });
    if (state.open !== open) return deliver(open, clientId);
    keepingBottom(() => {
      open.replyTo = null;
      renderReplying();
    });
    render({ pin: true });
    deliver(open, clientId);
  } catch (error) {
    showError(error);
  }
});

/// Announces the file, sends its bytes where the server says (to itself
/// with the token, or to an object store's presigned URL without), and
/// answers the attachment the server made of them.
async function uploadFile(open, file) {
  const ticket = await api("POST", `/v1/conversations/${open.id}/uploads`, {
    filename: file.name, content_type: file.type || "application/octet-stream", size: file.size,
  });
  const own = ticket.upload_url.startsWith("/");
  const headers = Object.assign({}, ticket.headers, own ? { Authorization: "Bearer " + state.token } : {});
  const response = await fetch(ticket.upload_url, { method: ticket.method, headers, body: file });
  let progress = own ? await response.json() : null;
  if (!response.ok) {
    throw new Error(progress && progress.error ? progress.error.message : "the upload failed: " + response.status);
  }
  if (!own) progress = await api("GET", `/v1/conversations/${open.id}/uploads/${ticket.upload_id}`);
  if (!progress.attachment) throw new Error(file.name + " did not arrive whole; try again");
  return progress.attachment;
}

function button(className, label, action) {
  const element = document.createElement("button");
  element.type = "button";
  element.className = className;
  element.textContent = label;
  element.addEventListener("click", action);
  return element;
}

/// The parent of a reply, compact: its sender and the start of its body.
function quote(preview) {
  const box = document.createElement("div");
  box.className = "quote" + (preview.deleted ? " deleted" : "");
  box.dataset.parent = preview.seq;
  const sender = document.createElement("span");
  sender.className = "sender";
  sender.dataset.user = preview.sender;
  sender.textContent = displayName(preview.sender);
  const excerpt = document.createElement("span");
  excerpt.className = "excerpt";
  excerpt.textContent = preview.deleted ? "deleted message" : preview.excerpt;
  box.append(sender, excerpt);
  return box;
}

/// Reply, and the emoji picker behind "+", at the end of a row's first line.
function actions(message) {
  const box = document.createElement("span");
  box.className = "actions";
  box.append(button("reply", "Reply", () => startReply(message.seq)));
  if (state.open.picker === message.seq) {
    for (const emoji of EMOJIS) {
      const choice = button("pick", emoji, () => {
        state.open.picker = null;
        render();
        renderThread();
        react(message.seq, emoji, true);
      });
      choice.dataset.emoji = emoji;
      box.append(choice);
    }
  }
  box.append(button("add-reaction", state.open.picker === message.seq ? "×" : "+", () => {
    state.open.picker = state.open.picker === message.seq ? null : message.seq;
    render();
    renderThread();
  }));
  if (message.sender !== state.user) {
    // Report the message (a reason), or block its sender.
    if (state.open.menu === message.seq) {
      for (const reason of REPORT_REASONS) {
        const choice = button("report-reason", reason.replace("_", " "), () => report(message, reason));
        choice.dataset.reason = reason;
        box.append(choice);
      }
      box.append(button("block", "block " + displayName(message.sender), () => block(message.sender)));
    }
    box.append(button("more", state.open.menu === message.seq ? "×" : "⋯", () => {
      state.open.menu = state.open.menu === message.seq ? null : message.seq;
      render();
    }));
  }
  return box;
}

const REPORT_REASONS = ["spam", "harassment", "hate", "violence", "sexual", "self_harm", "other"];

/// Reports a message for `reason`; the row says it was reported.
async function report(message, reason) {
  const open = state.open;
  try {
    await api("POST", "/v1/reports", { conversation_id: open.id, seq: message.seq, reason });
    open.reported.add(message.seq);
    open.menu = null;
    if (state.open === open) render();
  } catch (error) {
    showError(error);
  }
}

/// Blocks a user: their messages here fold away (the server flags them as
/// `blocked_sender` on this reader's pages), and they cannot start a
/// conversation with this user any more.
async function block(user) {
  const open = state.open;
  try {
    await api("PUT", `/v1/blocks/${encodeURIComponent(user)}`);
    open.menu = null;
    const conversation = state.conversations.find((c) => c.id === open.id);
    if (state.open === open) openConversation(conversation || { id: open.id, members: [], role: open.role });
  } catch (error) {
    showError(error);
  }
}

// A mention as the server parses it (mentions_in, sql/029_mentions_of_any_id.sql):
// `@` not after one of `A-Z a-z 0-9 . _ @ -`, then the longest run of them,
// trailing `.`, `-`, `_` trimmed, or `[`, any user id, the first `]` not
// escaped (`\]` is `]`, `\\` is `\`).
const MENTION = /(?<![A-Za-z0-9._@-])@(?:\[((?:[^\]\\]|\\[^])*)\]|([A-Za-z0-9._@-]+))/g;

/// The body as text nodes, with each @mention in a span of its own
/// (`me` when it mentions the reader, which the sender's own never does).
function withMentions(body, sender) {
  const nodes = [];
  let from = 0;
  for (const match of body.matchAll(MENTION)) {
    const bracketed = match[1] !== undefined;
    const user = bracketed ? match[1].replace(/\\([\]\\])/g, "$1") : match[2].replace(/[._-]+$/, "");
    if (!user) continue;
    const end = match.index + (bracketed ? match[0].length : 1 + user.length);
    if (match.index > from) nodes.push(document.createTextNode(body.slice(from, match.index)));
    const mention = document.createElement("span");
    mention.className = "mention" + (user === state.user && sender !== state.user ? " me" : "");
    mention.dataset.user = user;
    mention.textContent = body.slice(match.index, end);
    nodes.push(mention);
    from = end;
  }
  if (from < body.length) nodes.push(document.createTextNode(body.slice(from)));
  return nodes;
}

/// What a reply shows of `parent`, as the server computes it: the first
/// 100 code points of its body, none once it is deleted.
function replyPreview(parent) {
  return {
    seq: parent.seq,
    sender: parent.sender,
    excerpt: parent.deleted ? null : [...parent.body].slice(0, 100).join(""),
    deleted: !!parent.deleted,
  };
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
  if (!body.trim() || !state.open || Date.now() < state.slowUntil) return;
  $("body").value = "";
  const clientId = crypto.randomUUID();
  const replyTo = state.open.replyTo;
  state.open.pending.set(clientId, { body, replyTo });
  keepingBottom(() => {
    state.open.replyTo = null;
    renderReplying();
  });
  render({ pin: true });
  deliver(state.open, clientId);
});

/// Sends over the socket when it is open (answered by `ack`), otherwise
/// over HTTP; the same client_id makes a retry store it once.
async function deliver(open, clientId) {
  const pending = open.pending.get(clientId);
  if (!pending) return;
  const frame = { body: pending.body, client_id: clientId };
  if (pending.replyTo) frame.reply_to = pending.replyTo;
  if (pending.attachments) frame.attachments = pending.attachments.map((attachment) => attachment.id);
  if (state.socketOpen) {
    send(Object.assign({ type: "send", conversation_id: open.id }, frame));
    return;
  }
  try {
    const answer = await api("POST", `/v1/conversations/${open.id}/messages`, frame);
    acknowledged(open, clientId, answer.message);
  } catch (error) {
    showError(error);
    if (error.code === "slow_mode") slowDown(error.retryAfter || open.slowMode || 1);
    if (REFUSED_REPLY.has(error.code)) refused(open, clientId);
    else setTimeout(() => deliver(open, clientId), 2000);
  }
}

// A reply whose parent is gone (deleted meanwhile), or attachments that
// can no longer be sent (expired), are refused for good: sending them again
// would not change the answer.
// A send refused by slow mode is given back to the compose box, which
// counts down until it may be sent.
const REFUSED_REPLY = new Set(["invalid_reply_to", "message_deleted", "invalid_attachments", "slow_mode"]);

function refused(open, clientId) {
  const pending = open.pending.get(clientId);
  if (!pending) return;
  open.pending.delete(clientId);
  if (state.open !== open) return;
  render();
  if (!$("body").value) $("body").value = pending.body; // the text is not lost
}

// MARK: Replies, threads and reactions

function startReply(seq) {
  keepingBottom(() => {
    state.open.replyTo = seq;
    renderReplying();
  });
  $("body").focus();
}

function cancelReply() {
  keepingBottom(() => {
    state.open.replyTo = null;
    renderReplying();
  });
}

/// The bar above the composer: which message the next send answers.
function renderReplying() {
  const bar = $("replying");
  const open = state.open;
  const parent = open && open.replyTo !== null ? findMessage(open, open.replyTo) : null;
  bar.hidden = !parent;
  const label = $("replying-to");
  label.replaceChildren();
  if (parent) label.append("Replying to ", quote(replyPreview(parent)));
}

$("cancel-reply").addEventListener("click", cancelReply);
$("body").addEventListener("keydown", (event) => {
  if (event.key === "Escape" && state.open && state.open.replyTo !== null) cancelReply();
});

function findMessage(open, seq) {
  if (open.messages.has(seq)) return open.messages.get(seq);
  const thread = open.thread;
  if (!thread) return null;
  if (thread.rootMessage && thread.rootMessage.seq === seq) return thread.rootMessage;
  return thread.messages.get(seq) || null;
}

/// Sets (`on`) or removes the reader's reaction; the answer is the message
/// as it is now, and the live frame that follows carries the same version.
async function react(seq, emoji, on) {
  const open = state.open;
  try {
    const path = `/v1/conversations/${open.id}/messages/${seq}/reactions/${encodeURIComponent(emoji)}`;
    const answer = await api(on ? "PUT" : "DELETE", path);
    updated(open, answer.message);
  } catch (error) {
    showError(error);
    if (state.open === open) render();
  }
}

/// The thread panel: the root, then its replies oldest first, the newest at
/// the bottom as in the conversation.
async function openThread(root) {
  const open = state.open;
  try {
    const page = await api("GET", `/v1/conversations/${open.id}/messages/${root}/thread?limit=50`);
    if (state.open !== open) return;
    const messages = new Map();
    for (const message of page.messages) messages.set(message.seq, message);
    learnUsers(page.users);
    ensureProfiles([page.root && page.root.sender, ...page.messages.map((message) => message.sender)]);
    keepingBottom(() => {
      open.thread = { root, rootMessage: page.root, messages, hasOlder: page.has_older };
      renderThread();
    });
    $("thread-messages").scrollTop = $("thread-messages").scrollHeight;
  } catch (error) {
    showError(error);
  }
}

$("close-thread").addEventListener("click", () => keepingBottom(() => {
  state.open.thread = null;
  renderThread();
}));

function renderThread() {
  const panel = $("thread");
  const thread = state.open && state.open.thread;
  panel.hidden = !thread;
  const list = $("thread-messages");
  if (!thread) {
    list.replaceChildren();
    return;
  }
  const wasAtBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 4;
  list.replaceChildren();
  if (thread.rootMessage) {
    const root = messageItem(thread.rootMessage);
    root.classList.add("root");
    list.append(root);
  }
  if (thread.hasOlder) {
    const more = document.createElement("li");
    more.className = "older";
    more.textContent = "earlier replies are in the conversation";
    list.append(more);
  }
  let previous = thread.rootMessage;
  for (const seq of [...thread.messages.keys()].sort((a, b) => a - b)) {
    const message = thread.messages.get(seq);
    list.append(messageItem(message, previous));
    previous = message;
  }
  if (wasAtBottom) list.scrollTop = list.scrollHeight;
}

function acknowledged(open, clientId, message) {
  stored(open, message);
  open.pending.delete(clientId);
}

function stored(open, message) {
  const known = open.messages.get(message.seq);
  if (!known || known.version < message.version) open.messages.set(message.seq, message);
  open.lastSeq = Math.max(open.lastSeq, message.seq);
  // This window's own send, stored (its ack or its live frame, whichever
  // comes first): slow mode holds the next one back.
  if (message.client_id && open.pending.delete(message.client_id) && message.sender === state.user &&
      state.open === open && open.slowMode > 0 && open.role === "member") {
    slowDown(open.slowMode);
  }
  inThread(open, message);
  if (state.open === open) {
    render();
    renderThread();
    if (atBottom()) markRead();
  }
}

/// A new state of a message already sent (an edit, a deletion, a thread's
/// summary, reactions). One outside the loaded window stays out of it (an
/// old thread root gains a reply): its page brings it when scrolled to.
function updated(open, message) {
  const known = open.messages.get(message.seq);
  if (known && known.version >= message.version) return;
  if (known || message.seq > open.lastSeq) open.messages.set(message.seq, message);
  // The server does not send the replies again: their previews follow here.
  const preview = replyPreview(message);
  const replies = [...open.messages.values()];
  if (open.thread) replies.push(...open.thread.messages.values());
  for (const reply of replies) {
    if (reply.reply_to && reply.reply_to.seq === message.seq) reply.reply_to = preview;
  }
  inThread(open, message);
  if (state.open === open) {
    render();
    renderThread();
    renderReplying();
  }
}

/// The open thread keeps its root and the replies that arrive live.
function inThread(open, message) {
  const thread = open.thread;
  if (!thread) return;
  if (message.seq === thread.root) {
    if (!thread.rootMessage || thread.rootMessage.version < message.version) thread.rootMessage = message;
  } else if (message.thread_root === thread.root) {
    const known = thread.messages.get(message.seq);
    if (!known || known.version < message.version) thread.messages.set(message.seq, message);
  }
}

$("add-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const user = $("add-user").value.trim();
  if (!user || !state.open) return;
  try {
    const conversation = await api("POST", `/v1/conversations/${state.open.id}/members`, { user_id: user });
    $("add-user").value = "";
    $("title").textContent = titleOf(conversation);
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
      for (const clientId of [...state.open.pending.keys()]) deliver(state.open, clientId);
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
      if (open && frame.message.conversation_id === open.id) {
        ensureProfiles([frame.message.sender, frame.message.reply_to && frame.message.reply_to.sender]);
        stored(open, frame.message);
      }
      break;
    case "user_updated":
      if (learnProfile(frame.user)) profilesChanged();
      break;
    case "message_updated":
      if (open && frame.message.conversation_id === open.id) updated(open, frame.message);
      break;
    case "ack":
      if (open) acknowledged(open, frame.client_id, frame.message);
      break;
    case "typing":
      if (here) showTyping(frame.user_id);
      break;
    case "subscribed":
      if (here) readPresence(open.id);
      break;
    case "member_updated":
      if (here) {
        state.roles.set(frame.user_id, frame.role);
        if (frame.user_id === state.user) open.role = frame.role;
        renderRole();
        render();
      }
      break;
    case "conversation_updated":
      // The inbox's (with a cursor) renames a row; the open conversation's its header.
      for (const row of state.conversations) {
        if (row.id === frame.conversation_id) Object.assign(row, { title: frame.title, description: frame.description, image: frame.image, data: frame.data, slow_mode_seconds: frame.slow_mode_seconds });
      }
      renderInbox();
      if (here && frame.cursor === undefined) {
        if (open.conversation) open.conversation.title = frame.title;
        open.slowMode = frame.slow_mode_seconds;
        $("title").textContent = titleOf(state.conversations.find((c) => c.id === open.id) || open.conversation);
        renderRole();
      }
      break;
    case "presence":
      if (here) {
        state.presenceFramed.add(frame.user_id);
        state.presence.set(frame.user_id, frame);
        renderPresence();
      }
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
      if (open && frame.code === "slow_mode") slowDown(frame.retry_after || open.slowMode || 1);
      if (open && frame.ref && REFUSED_REPLY.has(frame.code)) refused(open, frame.ref);
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
  $("typing").textContent = users.length ? users.map(displayName).join(", ") + (users.length > 1 ? " are typing" : " is typing") : "";
}

window.addEventListener("resize", () => state.open && applyPadding());

// A reload keeps the user of this window.
const savedUser = sessionStorage.getItem("scrollback.user");
const savedToken = sessionStorage.getItem("scrollback.token");
if (savedUser && savedToken) start(savedUser, savedToken);
