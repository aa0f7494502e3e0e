// Viewfinder's camera page: the main session's live MJPEG preview plus every session
// control, generated from the active camera's capabilities, and a strip of tiles with
// every camera (each running one live), all kept in sync with the server over
// /api/events. No build step, no dependencies.
"use strict";

// Opened as http://user:password@host/ the page would carry the credentials into every
// relative URL, which fetch refuses; the browser has signed in by now, so drop them. The
// document being left opens nothing (no stream holds one of the browser's six connections
// to this host while the next document asks for its own).
const leaving = !!new URL(document.URL).username;
if (leaving) {
  location.replace(location.origin + location.pathname + location.search + location.hash);
}

const $ = (id) => document.getElementById(id);
const PRESETS = ["photo", "high", "medium", "low", "352x288", "640x480", "1280x720", "1920x1080", "3840x2160"];
const DURATION_POWER = 5; // AVCamManual's curve: fine control over short exposures

let state = null;        // the latest SessionState of the main session
let cameras = [];        // GET /api/cameras, each camera's state and main kept current by events
let caps = null;         // capabilities of the active camera
let builtFor = null;     // camera id the controls were built for
let streamDown = false, eventsDown = true;
const editing = new Set(); // sliders the person is dragging: don't overwrite them

// MARK: - API

/** POSTs a session call; renders the SessionState it answers; shows any error. */
async function call(path, body) {
  try {
    const r = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? "" : JSON.stringify(body),
    });
    const text = await r.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { /* not JSON */ }
    if (!r.ok) throw new Error(data && data.error ? data.error.message : `${path} failed (HTTP ${r.status})`);
    if (data && data.state) applyState(data);
    return data;
  } catch (e) {
    toast(e.message || String(e));
    return null;
  }
}

let toastTimer = null;
/** Shows a message for a while: an error, or with `kind` "info" news that is not one. */
function toast(message, kind) {
  const t = $("toast");
  t.textContent = message;
  t.classList.toggle("info", kind === "info");
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
}

/** Calls `fn` at most every `ms`, always with the latest arguments, and once at the end. */
function throttled(fn, ms = 90) {
  let last = 0, timer = null, args = null;
  return (...a) => {
    args = a;
    const wait = ms - (Date.now() - last);
    if (wait <= 0) { last = Date.now(); fn(...args); return; }
    if (!timer) timer = setTimeout(() => { timer = null; last = Date.now(); fn(...args); }, wait);
  };
}

// MARK: - Preview

let retries = 0, retryTimer = null;
// A hidden page streams nothing: each MJPEG stream holds one of the browser's six
// connections to the server, which every tab of it shares (the event stream stays).
let paused = document.hidden;
function startPreview() {
  clearTimeout(retryTimer);
  if (paused) return;
  $("preview").src = "/stream?" + Date.now();
  renderTiles(); // the main camera's tile shows this same request
}
$("preview").addEventListener("load", () => { retries = 0; streamDown = false; updateOffline(); });
$("preview").addEventListener("error", () => {
  if (paused || !$("preview").getAttribute("src")) return;
  streamDown = true;
  updateOffline();
  clearTimeout(retryTimer);
  retryTimer = setTimeout(startPreview, Math.min(5000, 500 * 2 ** retries++));
});
document.addEventListener("visibilitychange", () => {
  if (paused === document.hidden) return;
  paused = document.hidden;
  if (paused) {
    clearTimeout(retryTimer);
    $("preview").removeAttribute("src");
    renderTiles();
  } else {
    retries = 0;
    startPreview();
  }
});

function updateOffline() {
  // Stopped (idle, or failed to start) is not offline: it says so and offers to start.
  const halted = !!state && (state.state === "idle" || state.state === "failed");
  const offline = eventsDown || (!halted && (streamDown || (state && !state.online)));
  $("offline").hidden = !offline;
  $("stopped").hidden = offline || !halted;
  if (halted) {
    $("stopped-text").textContent = state.state === "failed"
      ? `${state.camera.name} could not start${state.error ? `: ${state.error}` : "."}`
      : `${state.camera.name} is stopped.`;
  }
  const badge = $("status");
  if (eventsDown) { badge.textContent = "reconnecting…"; badge.className = "badge offline"; return; }
  if (!state) return;
  badge.textContent = state.online || halted ? state.state : `${state.state} · offline`;
  badge.className = "badge " + (state.online ? "running" : halted ? "" : "offline");
}

// MARK: - Events

let lastMainAt = 0; // when the main session's last state arrived (performance.now())

/** Every camera's SessionState (events, call answers, polls) goes through here: it updates
 *  that camera's tile, and only the main session's (`main`: true) reaches the main view. */
function applyState(s) {
  updateCamera(s);
  if (s.main === false) return; // servers before several cameras send no `main`
  lastMainAt = performance.now();
  render(s);
}

function connectEvents() {
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => {
    // Connected, or back after a drop: states may have changed since the cameras were
    // listed (or while away), and the first event is the main session's only: list again.
    // A recording may have ended while away: list the movies again too.
    if (eventsDown && cameras.length) { loadCameras(); loadMovies(); }
    eventsDown = false;
    updateOffline();
  });
  events.addEventListener("state", (e) => { eventsDown = false; applyState(JSON.parse(e.data)); });
  events.addEventListener("photo", () => loadPhotos());
  events.addEventListener("recording", (e) => {
    let event = null;
    try { event = JSON.parse(e.data); } catch (_) { return; }
    if (event) recordingEvent(event);
  });
  events.addEventListener("metadata", (e) => { // servers before the metadata output send none
    let event = null;
    try { event = JSON.parse(e.data); } catch (_) { return; }
    if (event) metadataEvent(event);
  });
  events.addEventListener("error", () => { eventsDown = true; updateOffline(); }); // it reconnects by itself
}

// MARK: - Camera tiles: every camera, each running one live; click one to make it the main view

// Live tiles beyond the main preview: each holds a connection (the browser allows six per
// server, the event stream and the preview take two); further running cameras refresh
// from snapshots.
let tileStreamLimit = 3;
const TILE_FPS = 5;
const tileTimers = new Map(); // camera id → snapshot refresh or stream retry timer

/** A state for one camera: its tile's run state; `main` moves the main mark. */
function updateCamera(s) {
  const cam = cameras.find((c) => c.id === s.camera.id);
  if (!cam) { loadCameras(); return; } // a camera we haven't listed
  cam.state = s.state;
  cam.recording = !!(s.recording && s.recording.active); // servers before movies send no `recording`
  if (s.main === true) for (const c of cameras) c.main = c.id === cam.id;
  else if (s.main === false) cam.main = false;
  renderTiles();
}

function cameraPath(id) { return `/api/cameras/${encodeURIComponent(id)}/session`; }

function tileFor(cam) {
  let li = [...$("tiles").children].find((el) => el.dataset.camera === cam.id);
  if (li) return li;
  li = document.createElement("li");
  li.className = "tile";
  li.dataset.camera = cam.id;
  const pick = document.createElement("button");
  pick.type = "button";
  pick.className = "tile-pick";
  pick.addEventListener("click", () => {
    const c = cameras.find((x) => x.id === li.dataset.camera);
    if (viewOnly || !c || c.main) return;
    call("/api/session/switch", { camera: c.id });
  });
  const picture = document.createElement("span");
  picture.className = "tile-picture";
  const label = document.createElement("span");
  label.className = "tile-label";
  const name = document.createElement("span");
  name.className = "tile-name";
  const st = document.createElement("span");
  st.className = "tile-state";
  label.append(name, st);
  pick.append(picture, label);
  const power = document.createElement("button");
  power.type = "button";
  power.className = "tile-power";
  power.addEventListener("click", () => {
    const c = cameras.find((x) => x.id === li.dataset.camera);
    if (viewOnly || !c) return;
    call(`${cameraPath(c.id)}/${c.state === "running" || c.state === "interrupted" ? "stop" : "start"}`);
  });
  li.append(pick, power);
  return li;
}

/** The picture a tile shows: the main camera's is the preview's own request (the browser
 *  loads the same URL once); another running camera's is its stream at a few frames a
 *  second, or its snapshot once the live tiles are used up. */
function tileSource(cam, live) {
  if (paused || cam.state !== "running") return null;
  if (cam.main) return { url: $("preview").getAttribute("src") };
  if (live) return { url: `/cameras/${encodeURIComponent(cam.id)}/stream?fps=${TILE_FPS}` };
  return { url: `/cameras/${encodeURIComponent(cam.id)}/snapshot`, snapshot: true };
}

function renderTiles() {
  const strip = $("tiles");
  strip.hidden = cameras.length < 2; // one camera: the main view says it all
  let live = 0;
  const items = cameras.map((cam) => {
    const li = tileFor(cam);
    li.className = `tile ${cam.state || "idle"}${cam.main ? " main" : ""}${cam.recording ? " recording" : ""}`;
    const pick = li.querySelector(".tile-pick"), power = li.querySelector(".tile-power");
    li.querySelector(".tile-name").textContent = cam.name;
    li.querySelector(".tile-state").textContent = (cam.state || "idle") + (cam.main ? " · main" : "");
    pick.title = cam.main ? `${cam.name}: in the main view` : `Show ${cam.name} in the main view`;
    pick.setAttribute("aria-label", `${cam.name}, ${cam.state || "idle"}${cam.main ? ", in the main view" : ", show in the main view"}`);
    if (cam.main) pick.setAttribute("aria-current", "true"); else pick.removeAttribute("aria-current");
    pick.disabled = viewOnly;
    const running = cam.state === "running" || cam.state === "interrupted";
    power.textContent = running ? "■" : "▶";
    power.title = `${running ? "Stop" : "Start"} ${cam.name}`;
    power.setAttribute("aria-label", power.title);
    power.disabled = viewOnly;
    const source = tileSource(cam, !cam.main && cam.state === "running" && live < tileStreamLimit);
    if (source && !cam.main && !source.snapshot) live++;
    showTilePicture(li, cam, source);
    return li;
  });
  // Keep the elements (and their streams) that stay; drop the cameras that went.
  items.forEach((li, i) => { if (strip.children[i] !== li) strip.insertBefore(li, strip.children[i] || null); });
  while (strip.children.length > items.length) {
    const gone = strip.lastElementChild;
    showTilePicture(gone, { id: gone.dataset.camera }, null);
    gone.remove();
  }
}

function showTilePicture(li, cam, source) {
  let img = li.querySelector("img");
  const want = source ? source.url : null;
  if (!want) {
    clearTimeout(tileTimers.get(cam.id)); tileTimers.delete(cam.id);
    if (img) { img.removeAttribute("src"); img.remove(); } // closes its stream
    return;
  }
  if (!img) {
    img = document.createElement("img");
    img.alt = ""; img.draggable = false;
    img.addEventListener("load", () => { img.dataset.retries = "0"; });
    // A live tile that drops comes back after a while, as the preview does.
    img.addEventListener("error", () => {
      if (!img.isConnected || !img.getAttribute("src") || img.dataset.kind !== "stream") return;
      const n = Number(img.dataset.retries || 0);
      img.dataset.retries = String(n + 1);
      clearTimeout(tileTimers.get(cam.id));
      tileTimers.set(cam.id, setTimeout(() => { img.dataset.url = ""; renderTiles(); }, Math.min(10000, 1000 * 2 ** n)));
    });
    li.querySelector(".tile-picture").append(img);
  }
  if (img.dataset.url === want) return;
  clearTimeout(tileTimers.get(cam.id)); tileTimers.delete(cam.id);
  img.dataset.url = want;
  img.dataset.kind = source.snapshot ? "snapshot" : cam.main ? "main" : "stream";
  if (source.snapshot) {
    const refresh = () => {
      img.src = `${want}?${Date.now()}`;
      tileTimers.set(cam.id, setTimeout(refresh, 2000));
    };
    refresh();
  } else {
    img.src = img.dataset.kind === "stream" && Number(img.dataset.retries) > 0 ? `${want}&${Date.now()}` : want;
  }
}

// MARK: - Controls from capabilities

function options(select, values, labels = values) {
  select.replaceChildren(...values.map((v, i) => new Option(labels[i], v)));
}

function show(id, on) { $(id).hidden = !on; }

function setRange(input, range, step) {
  input.min = range.min; input.max = range.max;
  if (step) input.step = step;
}

function buildControls() {
  const cam = cameras.find((c) => c.id === state.camera.id);
  if (!cam) return;
  caps = cam.capabilities;
  builtFor = cam.id;
  options($("camera"), cameras.map((c) => c.id), cameras.map((c) => c.name));

  setRange($("zoom"), caps.zoom);
  $("zoom").title = caps.zoom.optical ? `Optical zoom to ${caps.zoom.opticalMax}×, digital beyond` : "Digital zoom";

  options($("focus-mode"), caps.focusModes);
  show("lens-row", caps.lensPosition);

  options($("exposure-mode"), caps.exposureModes);
  show("duration-row", !!caps.exposureDuration);
  show("iso-row", !!caps.iso);
  show("bias-row", !!caps.exposureBias);
  if (caps.iso) setRange($("iso"), caps.iso);
  if (caps.exposureBias) setRange($("bias"), caps.exposureBias);

  options($("wb-mode"), caps.whiteBalanceModes);
  show("temperature-row", !!caps.whiteBalanceTemperature);
  if (caps.whiteBalanceTemperature) setRange($("temperature"), caps.whiteBalanceTemperature);

  for (const id of ["torch", "torch-mode", "torch-level"]) $(id).disabled = !caps.torch;
  $("torch-reason").hidden = caps.torch;
  $("torch-reason").textContent = caps.torch ? "" : "This camera has no torch.";
  $("torch").title = caps.torch ? "Toggle the torch" : "This camera has no torch";

  buildCodeTypes();

  options($("preset"), PRESETS);
  const rates = [...new Set(cam.formats.flatMap((f) => f.fps))].sort((a, b) => b - a);
  options($("fps"), rates.map(String), rates.map((r) => `${r} fps`));
}

function setValue(id, value) {
  const el = $(id);
  if (editing.has(id) || document.activeElement === el && el.tagName === "SELECT") return;
  if (el.type === "checkbox") el.checked = value; else el.value = value;
}

function durationToSlider(d) {
  const r = caps.exposureDuration;
  return Math.pow((d - r.min) / (r.max - r.min), 1 / DURATION_POWER);
}
function sliderToDuration(p) {
  const r = caps.exposureDuration;
  return Math.pow(p, DURATION_POWER) * (r.max - r.min) + r.min;
}
function formatDuration(d) { return d >= 0.1 ? `${d.toFixed(2)} s` : `1/${Math.round(1 / d)}`; }

// MARK: - Rendering the state

function render(s) {
  state = s;
  if (!caps || builtFor !== s.camera.id) {
    if (cameras.some((c) => c.id === s.camera.id)) buildControls(); else loadCameras();
  }
  updateOffline();
  renderRecording();
  renderCodes(s);
  if (!caps) return;
  setValue("camera", s.camera.id);
  const f = s.format;
  const turned = s.orientation.rotation % 180 !== 0;
  $("stage").style.setProperty("--frame-ratio", turned ? `${f.height} / ${f.width}` : `${f.width} / ${f.height}`);
  $("format").textContent = `${s.camera.name} · ${f.width}×${f.height} @ ${f.fps} fps`;

  setValue("zoom", s.zoom.factor);
  // The lens and the crop, as AVFoundation's virtual devices tell them apart.
  const parts = s.zoom.optical > 1 && s.zoom.digital > 1 ? ` (${s.zoom.optical.toFixed(1)} optical × ${s.zoom.digital.toFixed(1)} digital)`
    : s.zoom.optical > 1 ? " optical" : "";
  $("zoom-value").textContent = `${s.zoom.factor.toFixed(1)}×${parts}${s.zoom.ramping ? " …" : ""}`;

  setValue("focus-mode", s.focus.mode);
  setValue("lens", s.focus.lensPosition);

  setValue("exposure-mode", s.exposure.mode);
  if (caps.exposureDuration) setValue("duration", durationToSlider(s.exposure.duration));
  $("duration-value").textContent = formatDuration(s.exposure.duration);
  setValue("iso", s.exposure.iso);
  $("iso-value").textContent = Math.round(s.exposure.iso);
  setValue("bias", s.exposure.bias);
  $("bias-value").textContent = `${s.exposure.bias >= 0 ? "+" : ""}${s.exposure.bias.toFixed(1)} EV`;

  setValue("wb-mode", s.whiteBalance.mode);
  setValue("temperature", s.whiteBalance.temperature);
  $("temperature-value").textContent = `${Math.round(s.whiteBalance.temperature)} K`;

  const on = s.torch.mode !== "off";
  $("torch").setAttribute("aria-pressed", String(on));
  $("torch").textContent = on ? `Torch ${s.torch.mode}` : "Torch off";
  setValue("torch-mode", s.torch.mode);
  setValue("torch-level", s.torch.level || 1);

  setValue("rotation", String(s.orientation.rotation));
  setValue("mirrored", s.orientation.mirrored);
  setValue("preset", s.preset);
  setValue("fps", String(f.fps));

  $("stats").textContent = `${s.stream.clients} viewer(s) · ${s.stream.fps} fps · frame ${s.frames.sequence}`;
}

// MARK: - Zoom: slider, wheel, pinch

const sendZoom = throttled((factor) => call("/api/session/zoom", { factor }));
function zoomTo(factor) {
  if (!caps) return;
  const f = Math.min(caps.zoom.max, Math.max(caps.zoom.min, factor));
  $("zoom").value = f;
  $("zoom-value").textContent = `${f.toFixed(1)}×`;
  sendZoom(f);
}
$("zoom").addEventListener("input", (e) => zoomTo(Number(e.target.value)));
$("stage").addEventListener("wheel", (e) => {
  if (viewOnly) return;
  e.preventDefault();
  zoomTo(Number($("zoom").value) * Math.pow(1.0015, -e.deltaY));
}, { passive: false });

// Pointers on the stage: two fingers pinch to zoom; a tap (little movement) focuses there.
const pointers = new Map();
let pinch = null, tapStart = null;
$("stage").addEventListener("pointerdown", (e) => {
  pointers.set(e.pointerId, e);
  if (pointers.size === 1) tapStart = { x: e.clientX, y: e.clientY };
  if (pointers.size === 2) {
    const [a, b] = [...pointers.values()];
    pinch = { distance: Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY), factor: Number($("zoom").value) };
    tapStart = null;
  }
});
$("stage").addEventListener("pointermove", (e) => {
  if (!pointers.has(e.pointerId)) return;
  pointers.set(e.pointerId, e);
  if (pinch && pointers.size === 2) {
    const [a, b] = [...pointers.values()];
    zoomTo(pinch.factor * Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY) / pinch.distance);
  }
});
function pointerEnd(e) {
  pointers.delete(e.pointerId);
  if (pointers.size < 2) pinch = null;
  if (tapStart && e.type === "pointerup" && Math.hypot(e.clientX - tapStart.x, e.clientY - tapStart.y) < 8) {
    focusAt(e.clientX, e.clientY);
  }
  if (pointers.size === 0) tapStart = null;
}
$("stage").addEventListener("pointerup", pointerEnd);
$("stage").addEventListener("pointercancel", pointerEnd);
$("stage").addEventListener("keydown", (e) => {
  if (e.key !== "Enter" && e.key !== " ") return;
  e.preventDefault();
  const r = contentRect();
  focusAt(r.left + r.width / 2, r.top + r.height / 2);
});

// MARK: - Tap to focus and expose

/** Where the frame is drawn inside the <img> (object-fit: contain letterboxes it). */
function contentRect() {
  const img = $("preview"), r = img.getBoundingClientRect();
  const iw = img.naturalWidth || 16, ih = img.naturalHeight || 9;
  const scale = Math.min(r.width / iw, r.height / ih);
  const w = iw * scale, h = ih * scale;
  return { left: r.left + (r.width - w) / 2, top: r.top + (r.height - h) / 2, width: w, height: h };
}

/** A point on the displayed frame → the device's point of interest, undoing mirroring,
 *  rotation and digital zoom (captureDevicePointConverted(fromLayerPoint:)). */
function devicePoint(u, v) {
  if (state.orientation.mirrored) u = 1 - u;
  let x, y;
  switch (state.orientation.rotation) {
    case 90: x = v; y = 1 - u; break;
    case 180: x = 1 - u; y = 1 - v; break;
    case 270: x = 1 - v; y = u; break;
    default: x = u; y = v;
  }
  const z = state.zoom.digital ?? 1;  // only the crop changes what a point on the frame means
  const clamp = (t) => Math.min(1, Math.max(0, t));
  return { x: clamp(0.5 + (x - 0.5) / z), y: clamp(0.5 + (y - 0.5) / z) };
}

async function focusAt(clientX, clientY) {
  if (!state || !caps || viewOnly || state.state !== "running") return;
  const r = contentRect();
  const u = (clientX - r.left) / r.width, v = (clientY - r.top) / r.height;
  if (u < 0 || u > 1 || v < 0 || v > 1) return;
  const ring = $("focus-ring"), stage = $("stage").getBoundingClientRect();
  ring.hidden = true; void ring.offsetWidth; // restart the animation
  ring.style.left = `${clientX - stage.left}px`;
  ring.style.top = `${clientY - stage.top}px`;
  ring.hidden = false;
  const point = devicePoint(u, v);
  if (caps.focusPointOfInterest) {
    const mode = state.focus.mode === "continuous" ? "continuous" : caps.focusModes.includes("auto") ? "auto" : state.focus.mode;
    await call("/api/session/focus", { mode, point });
  }
  if (caps.exposurePointOfInterest) await call("/api/session/exposure", { point });
  if (!caps.focusPointOfInterest && !caps.exposurePointOfInterest) toast("This camera cannot focus or expose at a point.");
}

// MARK: - The other controls

for (const id of ["zoom", "lens", "duration", "iso", "bias", "temperature", "torch-level"]) {
  $(id).addEventListener("pointerdown", () => editing.add(id));
  $(id).addEventListener("change", () => editing.delete(id));
  $(id).addEventListener("pointerup", () => setTimeout(() => editing.delete(id), 300));
}

$("camera").addEventListener("change", (e) => call("/api/session/switch", { camera: e.target.value }));
$("switch").addEventListener("click", () => call("/api/session/switch"));
$("start-main").addEventListener("click", () => call("/api/session/start"));

$("focus-mode").addEventListener("change", (e) => call("/api/session/focus", { mode: e.target.value }));
const sendLens = throttled((lensPosition) => call("/api/session/focus", { mode: "locked", lensPosition }));
$("lens").addEventListener("input", (e) => sendLens(Number(e.target.value)));

$("exposure-mode").addEventListener("change", (e) => call("/api/session/exposure", { mode: e.target.value }));
const sendCustom = throttled(() => call("/api/session/exposure", {
  mode: "custom", duration: sliderToDuration(Number($("duration").value)), iso: Number($("iso").value),
}));
$("duration").addEventListener("input", () => {
  $("duration-value").textContent = formatDuration(sliderToDuration(Number($("duration").value)));
  sendCustom();
});
$("iso").addEventListener("input", sendCustom);
const sendBias = throttled((bias) => call("/api/session/exposure", { bias }));
$("bias").addEventListener("input", (e) => sendBias(Number(e.target.value)));

$("wb-mode").addEventListener("change", (e) => call("/api/session/white-balance", { mode: e.target.value }));
const sendTemperature = throttled((temperature) => call("/api/session/white-balance", { temperature }));
$("temperature").addEventListener("input", (e) => sendTemperature(Number(e.target.value)));

function torchLevel() { return Number($("torch-level").value) || 1; }
$("torch").addEventListener("click", () =>
  call("/api/session/torch", { mode: state && state.torch.mode !== "off" ? "off" : "on", level: torchLevel() }));
$("torch-mode").addEventListener("change", (e) => call("/api/session/torch", { mode: e.target.value, level: torchLevel() }));
const sendTorchLevel = throttled((level) =>
  call("/api/session/torch", { mode: state.torch.mode === "off" ? "on" : state.torch.mode, level }));
$("torch-level").addEventListener("input", (e) => sendTorchLevel(Number(e.target.value)));

function sendOrientation() {
  call("/api/session/orientation", { rotation: Number($("rotation").value), mirrored: $("mirrored").checked });
}
$("rotation").addEventListener("change", sendOrientation);
$("mirrored").addEventListener("change", sendOrientation);

function sendFormat() { call("/api/session/prepare", { preset: $("preset").value, fps: Number($("fps").value) }); }
$("preset").addEventListener("change", sendFormat);
$("fps").addEventListener("change", sendFormat);

$("quality").addEventListener("input", (e) => { $("quality-value").textContent = e.target.value; });

// MARK: - Shutter and gallery

$("shutter").addEventListener("click", async () => {
  const flash = $("flash");
  flash.classList.remove("on"); void flash.offsetWidth; flash.classList.add("on");
  const photo = await call("/api/session/capture", { store: true, quality: Number($("quality").value) });
  if (!photo) return;
  const thumb = $("last-photo");
  thumb.querySelector("img").src = photo.url;
  thumb.hidden = false;
  loadPhotos();
});

async function loadPhotos() {
  let photos = [];
  try {
    const r = await fetch("/api/photos");
    if (!r.ok) throw new Error(`Photos could not be listed (HTTP ${r.status})`);
    photos = (await r.json()).photos;
  } catch (e) { toast(e.message); return; }
  $("photo-count").textContent = photos.length ? `(${photos.length})` : "none yet";
  $("photos").replaceChildren(...photos.map((p) => {
    const li = document.createElement("li");
    li.dataset.id = p.id;
    const when = new Date(p.capturedAt).toLocaleString();
    const view = document.createElement("a");
    view.href = p.url; view.target = "_blank"; view.rel = "noopener";
    const img = document.createElement("img");
    img.src = p.url; img.loading = "lazy"; img.alt = `Photo taken ${when}${p.camera ? ` with ${p.camera}` : ""}`;
    view.append(img);
    const caption = document.createElement("span");
    caption.className = "caption";
    const cam = p.camera ? cameras.find((c) => c.id === p.camera) : null;
    caption.textContent = cam ? cam.name : p.camera || "";
    caption.title = `${caption.textContent ? caption.textContent + ", " : ""}${when}`;
    caption.hidden = !p.camera;
    const actions = document.createElement("div");
    actions.className = "actions";
    const download = document.createElement("a");
    download.href = p.url; download.download = `viewfinder-${p.id}.jpg`; download.textContent = "Download";
    const del = document.createElement("button");
    del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete photo taken ${when}`);
    del.hidden = viewOnly;
    del.addEventListener("click", async () => {
      const r = await fetch(p.url, { method: "DELETE" }).catch(() => null);
      if (!r || !r.ok) toast(`The photo could not be deleted${r ? ` (HTTP ${r.status})` : ""}.`);
      loadPhotos();
    });
    actions.append(download, del);
    li.append(view, caption, actions);
    return li;
  }));
}

// MARK: - Movie recording (the main session's movie output)

// Why a recording ended by itself, as the `recording` event's `reason` says.
const END_REASONS = {
  maxDuration: "it reached its time limit",
  maxBytes: "it reached its size limit",
  diskFull: "the disk is full (what was written is kept)",
  cameraLost: "the camera was lost (what was recorded is kept)",
  formatChanged: "the camera or its format changed",
  failed: "the encoder failed",
};

let recordBusy = false;  // a start or stop on its way: one click at a time
let recordTimer = null;  // ticks the time shown while recording

/** The main session's recording, or null from a server that cannot record (no `recording`). */
function recording() {
  return state && state.recording && typeof state.recording === "object" ? state.recording : null;
}

/** Seconds as mm:ss (h:mm:ss from an hour). */
function clock(seconds) {
  const t = Math.max(0, Math.floor(Number(seconds) || 0));
  const two = (n) => String(n).padStart(2, "0");
  const h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
  return h ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
}

/** Seconds since the recording started, counted here from its `startedAt` (state events
 *  come on start and stop only). */
function recordingElapsed(rec) {
  const started = Date.parse(rec.startedAt);
  if (Number.isNaN(started)) return Number(rec.duration) || 0;
  return Math.max(0, (Date.now() - started) / 1000); // a clock behind the server's shows 00:00 a while
}

/** The record button from the main session's state: hidden from a server without movies,
 *  a red dot and the time while recording, disabled while the session doesn't run. */
function renderRecording() {
  const button = $("record"), rec = recording();
  clearTimeout(recordTimer);
  recordTimer = null;
  button.hidden = !rec;
  if (!rec) return;
  const active = !!rec.active;
  const running = state.state === "running";
  button.classList.toggle("recording", active);
  // Stopping stays possible whatever the session does; starting needs it running.
  button.disabled = viewOnly || recordBusy || (!active && !running);
  if (active) {
    const elapsed = recordingElapsed(rec);
    $("record-time").textContent = clock(elapsed);
    button.setAttribute("aria-label", "Stop recording");
    const lapse = rec.timelapse ? ` · timelapse, ${rec.frames} frame${rec.frames === 1 ? "" : "s"}` : "";
    button.title = `Recording since ${new Date(rec.startedAt).toLocaleTimeString()}${lapse}: click to stop`;
    // Next tick on the next whole second of the recording.
    recordTimer = setTimeout(renderRecording, 1000 - ((elapsed * 1000) % 1000) + 15);
  } else {
    $("record-time").textContent = "REC";
    button.setAttribute("aria-label", "Start recording a movie");
    button.title = running ? "Start recording a movie" : "Start the camera to record";
  }
}

/** A recording we know has ended: the button stops counting now, without waiting for the
 *  state (which a poll on its way must not undo). */
function endRecording(id) {
  const rec = recording();
  if (!rec || !rec.active || (id && rec.id !== id)) return;
  state.recording = Object.assign({}, rec, { active: false });
  lastMainAt = performance.now();
  renderRecording();
}

$("record").addEventListener("click", async () => {
  const rec = recording();
  if (!rec || viewOnly || recordBusy) return;
  recordBusy = true;
  renderRecording();
  try {
    if (rec.active) {
      const movie = await call("/api/session/recording/stop"); // 201 + the Movie
      if (movie) { endRecording(rec.id); loadMovies(); }
    } else {
      await call("/api/session/recording/start"); // answers the state, recording
    }
  } finally {
    recordBusy = false;
    renderRecording();
  }
});

/** `event: recording` (any camera's): a finished movie joins the gallery; the main
 *  session's button resets; a recording that ended by itself says why. */
function recordingEvent(event) {
  if (event.event !== "finished") return;
  const onMain = !!state && (!event.camera || event.camera === state.camera.id);
  if (onMain) endRecording(event.id);
  loadMovies();
  if (!event.reason || event.reason === "stopped") return;
  const cam = cameras.find((c) => c.id === event.camera);
  const where = cam && cameras.length > 1 ? ` on ${cam.name}` : "";
  const why = (END_REASONS[event.reason] || event.reason) + (event.message ? `: ${event.message}` : "");
  const kept = event.movie ? "" : " Nothing was recorded.";
  // A limit reached is what was asked for; the others are trouble.
  toast(`The recording${where} ended: ${why}.${kept}`,
        event.reason === "maxDuration" || event.reason === "maxBytes" ? "info" : undefined);
}

// MARK: - Movies in the gallery

let moviesAsked = 0; // the latest listing wins, whatever order the answers come in

function formatBytes(n) {
  return n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.ceil(n / 1e3)} kB`;
}

async function loadMovies() {
  const asked = ++moviesAsked;
  let movies = [];
  try {
    const r = await fetch("/api/movies");
    if (asked !== moviesAsked) return;
    if (r.status === 404) { $("movies-part").hidden = true; return; } // a server before movies
    if (!r.ok) throw new Error(`Movies could not be listed (HTTP ${r.status})`);
    movies = (await r.json()).movies || [];
  } catch (e) {
    if (asked === moviesAsked) toast(e.message);
    return;
  }
  if (asked !== moviesAsked) return;
  $("movies-part").hidden = false;
  $("movie-count").textContent = movies.length ? `(${movies.length})` : "none yet";
  // Keep the items that stay (a movie playing goes on playing); add the new ones in order.
  const list = $("movies");
  const have = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const items = movies.map((m) => {
    const li = have.get(m.id) || movieItem(m);
    have.delete(m.id);
    li.querySelector(".actions button").hidden = viewOnly;
    return li;
  });
  items.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
  for (const gone of have.values()) {
    const video = gone.querySelector("video");
    if (video) { video.pause(); video.removeAttribute("src"); video.load(); } // lets its connection go
    gone.remove();
  }
}

function movieItem(m) {
  const li = document.createElement("li");
  li.dataset.id = m.id;
  const when = new Date(m.startedAt).toLocaleString();
  const cam = m.camera ? cameras.find((c) => c.id === m.camera) : null;
  const camName = cam ? cam.name : m.camera || "";
  let picture;
  if (m.codec === "mjpeg") {
    // Browsers can't play MJPEG in MP4; players can.
    picture = document.createElement("div");
    picture.className = "movie-unplayable";
    picture.textContent = "MJPEG movie: download it to play it (VLC, mpv, ffplay).";
  } else {
    picture = document.createElement("video");
    picture.controls = true;
    picture.preload = "metadata";
    picture.playsInline = true;
    picture.src = m.url;
    picture.setAttribute("aria-label", `Movie recorded ${when}${camName ? ` with ${camName}` : ""}`);
  }
  const caption = document.createElement("span");
  caption.className = "caption";
  const duration = document.createElement("span");
  duration.className = "movie-duration";
  duration.textContent = clock(m.duration);
  const notes = [camName, m.timelapse ? "timelapse" : "", m.reason === "recovered" ? "recovered" : ""].filter(Boolean);
  caption.append(duration, notes.length ? ` · ${notes.join(" · ")}` : "");
  caption.title = [camName, when, `${m.width}×${m.height}`, String(m.codec).toUpperCase(), formatBytes(m.bytes || 0),
                   m.reason && m.reason !== "stopped" ? `ended: ${m.reason}` : ""].filter(Boolean).join(", ");
  const actions = document.createElement("div");
  actions.className = "actions";
  const download = document.createElement("a");
  download.href = m.url; download.download = `viewfinder-${m.id}.mp4`; download.textContent = "Download";
  const del = document.createElement("button");
  del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete movie recorded ${when}`);
  del.hidden = viewOnly;
  del.addEventListener("click", async () => {
    const r = await fetch(m.url, { method: "DELETE" }).catch(() => null);
    if (!r || !r.ok) toast(`The movie could not be deleted${r ? ` (HTTP ${r.status})` : ""}.`);
    loadMovies();
  });
  actions.append(download, del);
  li.append(picture, caption, actions);
  return li;
}

// MARK: - Codes (the main session's metadata output: QR codes and barcodes in the picture)

// zbar's types by the API's names, as people know them; the camera's list may hold others.
const CODE_TYPES = {
  qr: "QR", ean13: "EAN-13", ean8: "EAN-8", upca: "UPC-A", upce: "UPC-E", isbn10: "ISBN-10", isbn13: "ISBN-13",
  code128: "Code 128", code39: "Code 39", code93: "Code 93", i25: "Interleaved 2 of 5", codabar: "Codabar",
  databar: "DataBar", "databar-exp": "DataBar Expanded",
};
const RECENT_CODES = 10;
const SVG = "http://www.w3.org/2000/svg";

let codeObjects = [];         // the codes the overlay shows: the main session's, in view now
let codesBusy = 0;            // metadata calls on their way: the checkboxes keep what was clicked
const codesSeen = new Map();  // camera id → the codes (type + value) it had in view, so each sighting is listed once
const recentCodes = [];       // {camera, key, li}, newest first

/** The main session's metadata output, or null from a server without one (no `metadata`). */
function metadataState() {
  return state && state.metadata && typeof state.metadata === "object" ? state.metadata : null;
}

function codeTypeName(type) { return CODE_TYPES[type] || String(type); }
function codeKey(o) { return `${o.type}\n${o.encoding || ""}\n${o.value}`; }

/** What a code says, for people: its text, or its size when it is binary (sent base64). */
function codeText(o) {
  if (o.encoding !== "base64") return String(o.value);
  const b64 = String(o.value), bytes = Math.floor(b64.length * 3 / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
  return `binary, ${bytes} byte${bytes === 1 ? "" : "s"} (base64 ${b64.length > 24 ? b64.slice(0, 24) + "…" : b64})`;
}

/** The checkboxes, one per type the camera can find (all of zbar's when it doesn't say). */
function buildCodeTypes() {
  const md = caps && caps.metadata;
  const types = md && Array.isArray(md.availableTypes) && md.availableTypes.length ? md.availableTypes : Object.keys(CODE_TYPES);
  const box = $("code-types");
  if (box.dataset.types === types.join(" ")) return; // the same list: keep the boxes (and focus)
  box.dataset.types = types.join(" ");
  box.replaceChildren(...types.map((type) => {
    const label = document.createElement("label");
    const input = document.createElement("input");
    input.type = "checkbox";
    input.value = type;
    input.id = `code-type-${type}`;
    input.addEventListener("change", sendCodeTypes);
    label.title = `Look for ${codeTypeName(type)} codes (${type})`;
    label.append(input, codeTypeName(type));
    return label;
  }));
}

/** The types ticked, to the main session; its rect of interest stays as it is. */
async function sendCodeTypes() {
  const md = metadataState();
  if (!md || viewOnly) return;
  const body = { types: [...$("code-types").querySelectorAll("input:checked")].map((i) => i.value) };
  if (md.rectOfInterest) body.rectOfInterest = md.rectOfInterest; // absent would mean the whole picture
  codesBusy++;
  try {
    await call("/api/session/metadata", body);
  } finally {
    codesBusy--;
    renderCodeControls(); // a refused call shows what the server has
  }
}

/** The Codes panel from the main session's state: hidden from a server without metadata. */
function renderCodeControls() {
  const md = metadataState(), inputs = [...$("code-types").querySelectorAll("input")];
  $("codes-group").hidden = !md || !inputs.length;
  if (!md) return;
  const types = Array.isArray(md.types) ? md.types : [];
  if (!codesBusy) for (const input of inputs) input.checked = types.includes(input.value);
  const n = codeObjects.length;
  $("codes-status").textContent = !types.length ? "Off: tick the codes to look for."
    : n ? `${n} code${n === 1 ? "" : "s"} in view${md.rectOfInterest ? " (in part of the picture)" : ""}.`
    : `Looking for ${types.map(codeTypeName).join(", ")}${md.rectOfInterest ? " in part of the picture" : ""}…`;
}

/** A main session's state: the panel, the boxes over the preview and any code new in view. */
function renderCodes(s) {
  const md = metadataState();
  const objects = md && Array.isArray(md.objects) ? md.objects : [];
  if (md) noteCodes(s.camera.id, objects, null);
  showCodes(objects);
  renderRecentCodes();
}

/** `event: metadata` (any camera's): the codes in view changed. The main session's move the
 *  boxes; every camera's new codes join the list. */
function metadataEvent(event) {
  const objects = Array.isArray(event.objects) ? event.objects : [];
  const main = !!state && (!event.camera || event.camera === state.camera.id);
  noteCodes(event.camera || (state && state.camera.id), objects, event.timestamp);
  if (!main || !metadataState()) return;
  lastMainAt = performance.now(); // a state asked for before this has older codes: the poll drops it
  state.metadata = Object.assign({}, state.metadata, { objects });
  showCodes(objects);
}

function showCodes(objects) {
  codeObjects = objects;
  drawCodes();
  renderCodeControls();
}

// MARK: Boxes over the preview

/** A code's outline in the picture: its corners, or its bounds' (null without either). */
function codeOutline(o) {
  const finite = (p) => p && Number.isFinite(Number(p.x)) && Number.isFinite(Number(p.y));
  if (Array.isArray(o.corners) && o.corners.length >= 3 && o.corners.every(finite)) {
    return o.corners.map((p) => ({ x: Number(p.x), y: Number(p.y) }));
  }
  const b = o.bounds;
  if (!b || ![b.x, b.y, b.width, b.height].every((v) => Number.isFinite(Number(v)))) return null;
  const [x, y, w, h] = [b.x, b.y, b.width, b.height].map(Number);
  return [{ x, y }, { x, y: y + h }, { x: x + w, y: y + h }, { x: x + w, y }];
}

/** One box: a div over the code's bounding rect (in % of the picture), its outline an SVG
 *  polygon inside it, its value on a label above it (below it at the picture's top). */
function codeBox(o) {
  const points = codeOutline(o);
  if (!points) return null;
  let x0 = Math.min(...points.map((p) => p.x)), x1 = Math.max(...points.map((p) => p.x));
  let y0 = Math.min(...points.map((p) => p.y)), y1 = Math.max(...points.map((p) => p.y));
  const least = 0.01; // a code seen along one line still gets a box
  if (x1 - x0 < least) { const c = (x0 + x1) / 2; x0 = c - least / 2; x1 = c + least / 2; }
  if (y1 - y0 < least) { const c = (y0 + y1) / 2; y0 = c - least / 2; y1 = c + least / 2; }
  const box = document.createElement("div");
  box.className = "code-box";
  box.dataset.type = o.type;
  box.dataset.value = o.value;
  Object.assign(box.style, { left: `${x0 * 100}%`, top: `${y0 * 100}%`, width: `${(x1 - x0) * 100}%`, height: `${(y1 - y0) * 100}%` });
  box.classList.toggle("label-below", y0 < 0.08);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 100 100");
  svg.setAttribute("preserveAspectRatio", "none");
  const polygon = document.createElementNS(SVG, "polygon");
  polygon.setAttribute("points", points.map((p) => `${((p.x - x0) / (x1 - x0)) * 100},${((p.y - y0) / (y1 - y0)) * 100}`).join(" "));
  polygon.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(polygon);
  const label = document.createElement("span");
  label.className = "code-label";
  label.textContent = codeText(o);
  label.title = `${codeTypeName(o.type)}: ${codeText(o)}`;
  box.append(svg, label);
  return box;
}

/** Draws the boxes (none from a server without metadata, or before a frame has shown). */
function drawCodes() {
  const overlay = $("code-overlay");
  const shown = !!metadataState() && codeObjects.length > 0 && $("preview").naturalWidth > 0;
  overlay.hidden = !shown;
  if (!shown) { overlay.replaceChildren(); return; }
  placeCodeOverlay();
  overlay.replaceChildren(...codeObjects.map(codeBox).filter(Boolean));
}

/** The overlay over the frame's own rectangle in the stage (object-fit letterboxes the frame). */
function placeCodeOverlay() {
  const overlay = $("code-overlay");
  if (overlay.hidden) return;
  const stage = $("stage"), s = stage.getBoundingClientRect(), r = contentRect();
  Object.assign(overlay.style, {
    left: `${r.left - s.left - stage.clientLeft}px`, top: `${r.top - s.top - stage.clientTop}px`,
    width: `${r.width}px`, height: `${r.height}px`,
  });
}

// The frame's size is known from the first frame: draw then, and again only when it changes
// (a multipart preview fires "load" for every frame; rebuilding the boxes 30 times a second
// would be work for nothing, and left nothing steady to point at).
let codesDrawnFor = "";
$("preview").addEventListener("load", () => {
  const p = $("preview"), size = `${p.naturalWidth}x${p.naturalHeight}`;
  if (size === codesDrawnFor) return;
  codesDrawnFor = size;
  drawCodes();
});
if ("ResizeObserver" in window) new ResizeObserver(() => placeCodeOverlay()).observe($("stage"));
else window.addEventListener("resize", placeCodeOverlay);

// MARK: Recent codes

/** Codes `camera` has in view now: those it did not have before join the list (once each). */
function noteCodes(camera, objects, timestamp) {
  const before = codesSeen.get(camera) || new Set(), now = new Set();
  const when = Number.isFinite(timestamp) && timestamp > 0 ? new Date(timestamp * 1000) : new Date();
  let added = false;
  for (const o of objects) {
    if (!o || o.value === undefined || o.value === null) continue;
    const key = codeKey(o);
    if (now.has(key)) continue;
    now.add(key);
    if (before.has(key)) continue;
    // Seen again: it moves to the top with its new time.
    const again = recentCodes.findIndex((r) => r.camera === camera && r.key === key);
    if (again >= 0) recentCodes.splice(again, 1);
    recentCodes.unshift({ camera, key, li: recentCodeItem(camera, o, when) });
    added = true;
  }
  codesSeen.set(camera, now);
  if (recentCodes.length > RECENT_CODES) recentCodes.length = RECENT_CODES;
  if (added) renderRecentCodes();
}

function recentCodeItem(camera, o, when) {
  const li = document.createElement("li");
  li.dataset.type = o.type;
  li.dataset.value = o.value;
  const type = document.createElement("span");
  type.className = "code-type";
  type.textContent = codeTypeName(o.type);
  const cam = cameras.find((c) => c.id === camera);
  if (cameras.length > 1 && camera) {
    const where = document.createElement("span");
    where.className = "code-camera";
    where.textContent = cam ? cam.name : camera;
    type.append(where);
  }
  const value = document.createElement("span");
  value.className = "code-value";
  value.textContent = codeText(o);
  const time = document.createElement("time");
  time.dateTime = when.toISOString();
  time.textContent = when.toLocaleTimeString();
  time.title = when.toLocaleString();
  const copy = document.createElement("button");
  copy.type = "button";
  copy.textContent = "Copy";
  copy.setAttribute("aria-label", `Copy ${codeTypeName(o.type)} code ${codeText(o)}`);
  copy.addEventListener("click", () => copyCode(String(o.value), copy, value));
  li.append(type, value, time, copy);
  return li;
}

/** The list, newest first: shown while the main session looks for codes or once one was found. */
function renderRecentCodes() {
  const md = metadataState();
  const looking = !!md && Array.isArray(md.types) && md.types.length > 0;
  $("codes-part").hidden = !md || (!looking && !recentCodes.length);
  $("code-count").textContent = recentCodes.length ? "" : "none yet";
  const list = $("codes"), items = recentCodes.map((r) => r.li);
  items.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
  while (list.children.length > items.length) list.lastElementChild.remove();
}

/** Copies a code's value: the Clipboard API (secure pages only), else the older copy command;
 *  failing both, the value is selected to copy by hand. No error either way. */
async function copyCode(text, button, valueEl) {
  let copied = false;
  try {
    if (navigator.clipboard && window.isSecureContext) { await navigator.clipboard.writeText(text); copied = true; }
  } catch (_) { /* not allowed here: try the old way */ }
  if (!copied) {
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    Object.assign(area.style, { position: "fixed", top: "0", left: "0", opacity: "0" });
    document.body.append(area);
    try { area.select(); copied = document.execCommand("copy"); } catch (_) { copied = false; }
    area.remove();
  }
  if (!copied) { getSelection().selectAllChildren(valueEl); return; }
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = "Copy"; }, 1500);
}

// MARK: - Start

let loadingCameras = null;
function loadCameras() {
  if (!loadingCameras) {
    loadingCameras = fetch("/api/cameras")
      .then((r) => { if (!r.ok) throw new Error(); return r.json(); })
      .then((body) => {
        cameras = body.cameras;
        renderTiles();
        if (state && cameras.some((c) => c.id === state.camera.id)) render(state);
      })
      .catch(() => toast("Cameras could not be listed."))
      .finally(() => { loadingCameras = null; });
  }
  return loadingCameras;
}

// Live figures (fps, viewers) change without events; refresh them every two seconds.
setInterval(async () => {
  if (leaving) return;
  const asked = performance.now();
  try {
    const r = await fetch("/api/session");
    const s = r.ok ? await r.json() : null;
    // An event that came while this was on its way is newer: keep it.
    if (s && lastMainAt <= asked) applyState(s);
  } catch (_) { /* the event stream shows we're offline */ }
}, 2000);

// Who we are: a viewer watches; the controls are shown but cannot be used. The browser
// signs every same-origin request in (its own Basic/Digest prompt); the page keeps no password.
let viewOnly = false;
async function loadMe() {
  try {
    const r = await fetch("/api/me");
    if (!r.ok) return;
    const me = await r.json();
    viewOnly = me.role === "viewer";
    document.body.classList.toggle("view-only", viewOnly);
    $("view-only").hidden = !viewOnly;
    $("view-only").title = me.name ? `Signed in as ${me.name} (viewer)` : "Viewer";
    for (const el of [document.querySelector(".controls"), $("shutter"), $("switch"), $("camera"), $("start-main")]) {
      el.inert = viewOnly;
      if ("disabled" in el) el.disabled = viewOnly;
    }
    $("record").inert = viewOnly; // renderRecording disables it
    renderRecording();
    renderTiles();
  } catch (_) { /* offline: the event stream shows it */ }
}

if (!leaving) loadMe().then(loadCameras).then(() => { connectEvents(); startPreview(); loadPhotos(); loadMovies(); });
