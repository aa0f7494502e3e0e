// The page's one store: what the server said (the main session's state, the cameras), who
// the person is, how the connections are, and what the sections share (busy calls, the codes
// in view and seen, the motion events, the mask being drawn). It is the only module that
// writes these: everything else reads `store` (which refuses writes) and changes it through
// the named functions below, which then tell the topics' subscribers (main.js wires them to
// the sections' renderers). Nothing here touches the DOM or the network.

const RECENT_CODES = 10; // codes listed under the page, newest first
const RECENT_MOTION = 10; // motion events listed under the page, newest first

const data = {
  state: null,             // the latest SessionState of the main session
  cameras: [],             // GET /api/cameras, each camera's state, recording and main kept current by events
  services: null,          // GET /api/cameras' services: the RTSP port, the ONVIF device's address and discovery
  caps: null,              // capabilities of the camera the controls were built for
  builtFor: null,          // camera id the controls were built for
  viewOnly: false,         // signed in as a viewer: the controls are shown but cannot be used
  signedInAs: "",          // the name GET /api/me says
  eventsDown: true,        // the event stream is not (yet, or no longer) connected
  streamDown: false,       // the preview stream failed and waits to retry
  transport: "",           // how the main preview arrives: "WebRTC", "MJPEG", or "" before either
  paused: document.hidden, // a hidden page streams nothing
  lastMainAt: 0,           // when the main session's last state arrived (performance.now())
  tileStreamLimit: 3,      // live tiles beyond the main preview; further running cameras refresh from snapshots
  recordBusy: false,       // a recording start or stop on its way: one click at a time
  codesBusy: 0,            // metadata calls on their way: the checkboxes keep what was clicked
  codeObjects: [],         // the codes the overlay shows: the main session's, in view now
  recentCodes: [],         // {camera, key, code, when} of the codes seen, newest first
  motionBusy: 0,           // motion calls on their way: the toggles keep what was clicked
  motionEvents: [],        // {camera, start, end, score, peak, movie} of the latest motion events, newest first
  maskDraft: null,         // the mask being drawn ([[x, y], …] normalized, [] before its first point), or null while masks aren't edited
};
const codesSeen = new Map(); // camera id → the codes (type + value) it had in view, so each sighting is listed once

/** The store, read-only: `store.state`, `store.cameras`, … Writing a field throws. */
export const store = new Proxy(data, {
  set(_, key) { throw new TypeError(`store.${String(key)} is written by state.js's functions only`); },
  deleteProperty(_, key) { throw new TypeError(`store.${String(key)} is written by state.js's functions only`); },
  defineProperty(_, key) { throw new TypeError(`store.${String(key)} is written by state.js's functions only`); },
});

// MARK: - Subscriptions

// Each topic names what changed; its subscribers run in the order they subscribed.
const topics = {
  main: [],             // (state) the main session's state is new: the main view renders from it
  cameras: [],          // the camera list, or a camera's run state or main mark: the tiles
  "unknown-camera": [], // (id) a state came for a camera not listed: list them again
  connection: [],       // eventsDown, streamDown or transport
  role: [],             // viewOnly (GET /api/me answered)
  recording: [],        // recordBusy, or the main session's recording ended here
  codes: [],            // the codes in view on the main session (codeObjects)
  "codes-busy": [],     // a metadata call finished
  "recent-codes": [],   // recentCodes
  motion: [],           // the main session's motion started or ended (its outline)
  "motion-busy": [],    // a motion call finished
  "motion-events": [],  // motionEvents
  "mask-draft": [],     // maskDraft
  tiles: [],            // tileStreamLimit
  services: [],         // services (GET /api/cameras: RTSP's port, the ONVIF device)
};

/** Calls `fn` whenever `topic` changes. */
export function subscribe(topic, fn) {
  if (!topics[topic]) throw new TypeError(`no topic ${topic}`);
  topics[topic].push(fn);
}

function emit(topic, ...args) {
  for (const fn of topics[topic]) fn(...args);
}

// MARK: - Readers

/** The main session's metadata output, or null from a server without one (no `metadata`). */
export function mainMetadata() {
  const s = data.state;
  return s && s.metadata && typeof s.metadata === "object" ? s.metadata : null;
}

/** The main session's recording, or null from a server that cannot record (no `recording`). */
export function mainRecording() {
  const s = data.state;
  return s && s.recording && typeof s.recording === "object" ? s.recording : null;
}

/** The main session's motion detection, or null from a server without it (no `motion`). */
export function mainMotion() {
  const s = data.state;
  return s && s.motion && typeof s.motion === "object" ? s.motion : null;
}

// MARK: - Session states and cameras

/** Every camera's SessionState (events, call answers, polls) goes through here: it updates
 *  that camera's entry (its tile), and only the main session's (`main`: true) reaches the
 *  main view. */
export function applyState(s) {
  const cam = data.cameras.find((c) => c.id === s.camera.id);
  if (!cam) {
    emit("unknown-camera", s.camera.id); // a camera we haven't listed
  } else {
    cam.state = s.state;
    cam.recording = !!(s.recording && s.recording.active); // servers before movies send no `recording`
    if (s.main === true) for (const c of data.cameras) c.main = c.id === cam.id;
    else if (s.main === false) cam.main = false;
    emit("cameras");
  }
  if (s.main === false) return; // servers before several cameras send no `main`
  data.lastMainAt = performance.now();
  setMainState(s);
}

/** The main session's state is `s`: the codes it has in view join the list, and the main
 *  view renders it. */
export function setMainState(s) {
  // A mask being drawn belongs to the picture it was drawn on: another camera's, or a state
  // without motion, ends the drawing.
  if (data.maskDraft && (!s.motion || (data.state && data.state.camera.id !== s.camera.id))) data.maskDraft = null;
  data.state = s;
  const md = mainMetadata();
  const objects = md && Array.isArray(md.objects) ? md.objects : [];
  if (md) noteCodes(s.camera.id, objects, null);
  data.codeObjects = objects;
  emit("main", s);
}

/** GET /api/cameras answered: the tiles, and the main view once its camera is listed. */
export function setCameras(cameras) {
  data.cameras = cameras;
  emit("cameras");
  if (data.state && cameras.some((c) => c.id === data.state.camera.id)) setMainState(data.state);
}

/** Where other programs reach the cameras (GET /api/cameras' services). */
export function setServices(services) {
  data.services = services || null;
  emit("services");
}

/** The controls were built from `cam`'s capabilities. */
export function controlsBuiltFor(cam) {
  data.caps = cam.capabilities;
  data.builtFor = cam.id;
}

/** GET /api/me answered: a viewer watches; the controls are shown but cannot be used. */
export function setRole(me) {
  data.viewOnly = me.role === "viewer";
  data.signedInAs = me.name || "";
  emit("role");
}

/** The tiles that may stream live at once (beyond the main preview). */
export function setTileStreamLimit(n) {
  data.tileStreamLimit = Number(n);
  emit("tiles");
}

// MARK: - Connections

export function setEventsDown(down) {
  if (data.eventsDown === down) return;
  data.eventsDown = down;
  emit("connection");
}

export function setStreamDown(down) {
  if (data.streamDown === down) return;
  data.streamDown = down;
  emit("connection");
}

/** The main preview now arrives by `transport` ("WebRTC" or "MJPEG"). */
export function setTransport(transport) {
  if (data.transport === transport) return;
  data.transport = transport;
  emit("connection");
}

/** The page was hidden or shown again (preview.js stops and starts its streams). */
export function setPaused(paused) {
  data.paused = paused;
}

// MARK: - Recording

export function setRecordBusy(busy) {
  data.recordBusy = busy;
  emit("recording");
}

/** A recording we know has ended: the button stops counting now, without waiting for the
 *  state (which a poll on its way must not undo). */
export function endRecording(id) {
  const rec = mainRecording();
  if (!rec || !rec.active || (id && rec.id !== id)) return;
  data.state = Object.assign({}, data.state, { recording: Object.assign({}, rec, { active: false }) });
  data.lastMainAt = performance.now();
  emit("recording");
}

// MARK: - Codes

/** A metadata call is on its way. */
export function beginCodesCall() { data.codesBusy++; }

/** A metadata call has answered (or failed). */
export function endCodesCall() {
  data.codesBusy--;
  emit("codes-busy");
}

/** `event: metadata` (any camera's): the codes in view changed. Every camera's new codes
 *  join the list; the main session's move the boxes. */
export function applyMetadata(event) {
  const objects = Array.isArray(event.objects) ? event.objects : [];
  const s = data.state;
  const main = !!s && (!event.camera || event.camera === s.camera.id);
  if (noteCodes(event.camera || (s && s.camera.id), objects, event.timestamp)) emit("recent-codes");
  if (!main || !mainMetadata()) return;
  data.lastMainAt = performance.now(); // a state asked for before this has older codes: the poll drops it
  data.state = Object.assign({}, s, { metadata: Object.assign({}, s.metadata, { objects }) });
  data.codeObjects = objects;
  emit("codes");
}

/** Identifies a code for "seen before": its type, encoding and value. */
function codeKey(o) { return `${o.type}\n${o.encoding || ""}\n${o.value}`; }

/** Codes `camera` has in view now: those it did not have before join the list (once each).
 *  True when the list changed. */
function noteCodes(camera, objects, timestamp) {
  const before = codesSeen.get(camera) || new Set(), now = new Set();
  const when = Number.isFinite(timestamp) && timestamp > 0 ? new Date(timestamp * 1000) : new Date();
  const recent = data.recentCodes;
  let added = false;
  for (const o of objects) {
    if (!o || o.value === undefined || o.value === null) continue;
    const key = codeKey(o);
    if (now.has(key)) continue;
    now.add(key);
    if (before.has(key)) continue;
    // Seen again: it moves to the top with its new time.
    const again = recent.findIndex((r) => r.camera === camera && r.key === key);
    if (again >= 0) recent.splice(again, 1);
    recent.unshift({ camera, key, code: o, when });
    added = true;
  }
  codesSeen.set(camera, now);
  if (recent.length > RECENT_CODES) recent.length = RECENT_CODES;
  return added;
}

// MARK: - Motion

/** A motion call is on its way. */
export function beginMotionCall() { data.motionBusy++; }

/** A motion call has answered (or failed). */
export function endMotionCall() {
  data.motionBusy--;
  emit("motion-busy");
}

/** Masks are being drawn: `points` is the polygon so far; null when the drawing ends. */
export function setMaskDraft(points) {
  data.maskDraft = points;
  emit("mask-draft");
}

/** The same event's times: the server sends its start in each of its messages. */
function sameTime(a, b) { return Math.abs(Number(a) - Number(b)) < 0.001; }

/** `event: motion` (any camera's): an event started, moved (a few times a second, with where)
 *  or ended. A start or end joins the list (an end completes its start's entry); the main
 *  session's also shows, moves or hides the outline now, not at the next state. */
export function applyMotion(event) {
  const s = data.state;
  const camera = event.camera || (s && s.camera.id);
  const ended = event.event === "ended";
  const start = Number.isFinite(event.start) ? event.start : event.at;
  if (!Number.isFinite(start)) return;
  if (event.event !== "moving") listMotion(event, camera, start, ended);
  const md = mainMotion();
  if (!md || camera !== s.camera.id) return;
  data.lastMainAt = performance.now(); // a state asked for before this has the older motion: the poll drops it
  data.state = Object.assign({}, s, { motion: Object.assign({}, md, {
    active: !ended, since: ended ? null : start, box: ended ? null : event.box || null,
    score: Number.isFinite(event.score) ? event.score : md.score,
  }) });
  emit("motion");
}

function listMotion(event, camera, start, ended) {
  const list = data.motionEvents;
  const i = list.findIndex((e) => e.camera === camera && sameTime(e.start, start));
  // Entries are replaced, never changed: codes.js's way of making each item once.
  const entry = Object.assign({ camera, start, end: null, score: null, peak: null, movie: null }, i >= 0 ? list[i] : {},
                              { score: Number.isFinite(event.score) ? event.score : null });
  if (ended) Object.assign(entry, { end: Number.isFinite(event.end) ? event.end : event.at, peak: event.peak || null });
  if (i >= 0) list[i] = entry; else list.unshift(entry); // an end whose start came before the page did: listed too
  if (list.length > RECENT_MOTION) list.length = RECENT_MOTION;
  emit("motion-events");
}

/** A finished movie: one recorded for a motion event joins that event's entry. */
export function noteMotionMovie(movie) {
  if (!movie || movie.trigger !== "motion" || !movie.event) return;
  const list = data.motionEvents;
  const i = list.findIndex((e) => e.camera === movie.camera && sameTime(e.start, movie.event.start));
  if (i < 0) return;
  list[i] = Object.assign({}, list[i], { movie });
  emit("motion-events");
}
