// Viewfinder's camera page: the live MJPEG preview plus every session control, generated
// from the active camera's capabilities and kept in sync with the server over
// /api/events. No build step, no dependencies.
"use strict";

// Opened as http://user:password@host/ the page would carry the credentials into every
// relative URL, which fetch refuses; the browser has signed in by now, so drop them.
if (new URL(document.URL).username) {
  location.replace(location.origin + location.pathname + location.search + location.hash);
}

const $ = (id) => document.getElementById(id);
const PRESETS = ["photo", "high", "medium", "low", "352x288", "640x480", "1280x720", "1920x1080", "3840x2160"];
const DURATION_POWER = 5; // AVCamManual's curve: fine control over short exposures

let state = null;        // the latest SessionState
let cameras = [];        // GET /api/cameras
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
    if (data && data.state) render(data);
    return data;
  } catch (e) {
    toast(e.message || String(e));
    return null;
  }
}

let toastTimer = null;
function toast(message) {
  const t = $("toast");
  t.textContent = message;
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

let retries = 0;
function startPreview() { $("preview").src = "/stream?" + Date.now(); }
$("preview").addEventListener("load", () => { retries = 0; streamDown = false; updateOffline(); });
$("preview").addEventListener("error", () => {
  streamDown = true;
  updateOffline();
  setTimeout(startPreview, Math.min(5000, 500 * 2 ** retries++));
});

function updateOffline() {
  const offline = streamDown || eventsDown || (state && !state.online);
  $("offline").hidden = !offline;
  const badge = $("status");
  if (eventsDown) { badge.textContent = "reconnecting…"; badge.className = "badge offline"; return; }
  if (!state) return;
  badge.textContent = state.online ? state.state : `${state.state} · offline`;
  badge.className = "badge " + (state.online ? "running" : "offline");
}

// MARK: - Events

function connectEvents() {
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => { eventsDown = false; updateOffline(); });
  events.addEventListener("state", (e) => { eventsDown = false; render(JSON.parse(e.data)); });
  events.addEventListener("photo", () => loadPhotos());
  events.addEventListener("error", () => { eventsDown = true; updateOffline(); }); // it reconnects by itself
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
  if (!caps) return;
  setValue("camera", s.camera.id);
  const f = s.format;
  const turned = s.orientation.rotation % 180 !== 0;
  $("stage").style.aspectRatio = turned ? `${f.height} / ${f.width}` : `${f.width} / ${f.height}`;
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
  if (!state || !caps || viewOnly) return;
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
    img.src = p.url; img.loading = "lazy"; img.alt = `Photo taken ${when}`;
    view.append(img);
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
    li.append(view, actions);
    return li;
  }));
}

// MARK: - Start

let loadingCameras = null;
function loadCameras() {
  if (!loadingCameras) {
    loadingCameras = fetch("/api/cameras")
      .then((r) => r.json())
      .then((body) => { cameras = body.cameras; if (state && cameras.some((c) => c.id === state.camera.id)) render(state); })
      .catch(() => toast("Cameras could not be listed."))
      .finally(() => { loadingCameras = null; });
  }
  return loadingCameras;
}

// Live figures (fps, viewers) change without events; refresh them every two seconds.
setInterval(async () => {
  try { const r = await fetch("/api/session"); if (r.ok) render(await r.json()); } catch (_) { /* the event stream shows we're offline */ }
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
    for (const el of [document.querySelector(".controls"), $("shutter"), $("switch"), $("camera")]) {
      el.inert = viewOnly;
      if ("disabled" in el) el.disabled = viewOnly;
    }
  } catch (_) { /* offline: the event stream shows it */ }
}

loadMe().then(loadCameras).then(() => { connectEvents(); startPreview(); loadPhotos(); });
