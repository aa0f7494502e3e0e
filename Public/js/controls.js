// The camera controls: built from the active camera's capabilities, filled from the main
// session's state, and sending what the person changes (zoom by slider, wheel or pinch; tap
// to focus and expose; focus, exposure, white balance, torch, orientation, format). Also what
// a viewer may not use (the role).

import { $, throttled, toast } from "./page.js";
import { call, loadCameras } from "./api.js";
import { store, controlsBuiltFor } from "./state.js";
import { contentRect } from "./preview.js";
import { buildCodeTypes } from "./codes.js";

const PRESETS = ["photo", "high", "medium", "low", "352x288", "640x480", "1280x720", "1920x1080", "3840x2160"];
const DURATION_POWER = 5; // AVCamManual's curve: fine control over short exposures
const editing = new Set(); // sliders the person is dragging: don't overwrite them

// MARK: - Controls from capabilities

function options(select, values, labels = values) {
  select.replaceChildren(...values.map((v, i) => new Option(labels[i], v)));
}

function show(id, on) { $(id).hidden = !on; }

function setRange(input, range, step) {
  input.min = range.min; input.max = range.max;
  if (step) input.step = step;
}

/** The controls for the main session's camera, from its capabilities. */
export function buildControls() {
  const cameras = store.cameras;
  const cam = cameras.find((c) => c.id === store.state.camera.id);
  if (!cam) return;
  controlsBuiltFor(cam);
  const caps = store.caps;
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

/** A main state for another camera than the controls were built for: build them again (or
 *  list the cameras first, when it is one not listed yet). */
export function ensureControls(s) {
  if (store.caps && store.builtFor === s.camera.id) return;
  if (store.cameras.some((c) => c.id === s.camera.id)) buildControls(); else loadCameras();
}

function setValue(id, value) {
  const el = $(id);
  if (editing.has(id) || document.activeElement === el && el.tagName === "SELECT") return;
  if (el.type === "checkbox") el.checked = value; else el.value = value;
}

function durationToSlider(d) {
  const r = store.caps.exposureDuration;
  return Math.pow((d - r.min) / (r.max - r.min), 1 / DURATION_POWER);
}
function sliderToDuration(p) {
  const r = store.caps.exposureDuration;
  return Math.pow(p, DURATION_POWER) * (r.max - r.min) + r.min;
}
function formatDuration(d) { return d >= 0.1 ? `${d.toFixed(2)} s` : `1/${Math.round(1 / d)}`; }

// MARK: - Rendering the state

/** The controls' values from the main session's state `s`. */
export function renderControls(s) {
  const caps = store.caps;
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

/** Who we are: a viewer watches; the controls are shown but cannot be used. */
export function renderRole() {
  const viewOnly = store.viewOnly;
  document.body.classList.toggle("view-only", viewOnly);
  $("view-only").hidden = !viewOnly;
  $("view-only").title = store.signedInAs ? `Signed in as ${store.signedInAs} (viewer)` : "Viewer";
  for (const el of [document.querySelector(".controls"), $("shutter"), $("switch"), $("camera"), $("start-main")]) {
    el.inert = viewOnly;
    if ("disabled" in el) el.disabled = viewOnly;
  }
  $("record").inert = viewOnly; // renderRecording disables it
}

// MARK: - Zoom: slider, wheel, pinch

const sendZoom = throttled((factor) => call("/api/session/zoom", { factor }));
function zoomTo(factor) {
  const caps = store.caps;
  if (!caps) return;
  const f = Math.min(caps.zoom.max, Math.max(caps.zoom.min, factor));
  $("zoom").value = f;
  $("zoom-value").textContent = `${f.toFixed(1)}×`;
  sendZoom(f);
}
$("zoom").addEventListener("input", (e) => zoomTo(Number(e.target.value)));
$("stage").addEventListener("wheel", (e) => {
  if (store.viewOnly) return;
  e.preventDefault();
  zoomTo(Number($("zoom").value) * Math.pow(1.0015, -e.deltaY));
}, { passive: false });

// Pointers on the stage: two fingers pinch to zoom; a tap (little movement) focuses there.
const pointers = new Map();
let pinch = null, tapStart = null; // the pinch's start (distance, factor); the tap's start point
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

/** A point on the displayed frame → the device's point of interest, undoing mirroring,
 *  rotation and digital zoom (captureDevicePointConverted(fromLayerPoint:)). */
function devicePoint(u, v) {
  const state = store.state;
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
  const state = store.state, caps = store.caps;
  if (!state || !caps || store.viewOnly || state.state !== "running") return;
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
  call("/api/session/torch", { mode: store.state && store.state.torch.mode !== "off" ? "off" : "on", level: torchLevel() }));
$("torch-mode").addEventListener("change", (e) => call("/api/session/torch", { mode: e.target.value, level: torchLevel() }));
const sendTorchLevel = throttled((level) =>
  call("/api/session/torch", { mode: store.state.torch.mode === "off" ? "on" : store.state.torch.mode, level }));
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
