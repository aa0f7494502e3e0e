// Codes: the main session's metadata output (QR codes and barcodes in the picture). The
// Codes panel's checkboxes (which types to look for), the boxes drawn over the preview and
// the list of codes seen, each rendered from the store; copying a code's value.

import { $, cameraTag } from "./page.js";
import { call } from "./api.js";
import { store, mainMetadata, beginCodesCall, endCodesCall } from "./state.js";
import { coverPicture, pictureSize } from "./preview.js";

// zbar's types by the API's names, as people know them; the camera's list may hold others.
const CODE_TYPES = {
  qr: "QR", ean13: "EAN-13", ean8: "EAN-8", upca: "UPC-A", upce: "UPC-E", isbn10: "ISBN-10", isbn13: "ISBN-13",
  code128: "Code 128", code39: "Code 39", code93: "Code 93", i25: "Interleaved 2 of 5", codabar: "Codabar",
  databar: "DataBar", "databar-exp": "DataBar Expanded",
};
const SVG = "http://www.w3.org/2000/svg";

function codeTypeName(type) { return CODE_TYPES[type] || String(type); }

/** What a code says, for people: its text, or its size when it is binary (sent base64). */
function codeText(o) {
  if (o.encoding !== "base64") return String(o.value);
  const b64 = String(o.value), bytes = Math.floor(b64.length * 3 / 4) - (b64.endsWith("==") ? 2 : b64.endsWith("=") ? 1 : 0);
  return `binary, ${bytes} byte${bytes === 1 ? "" : "s"} (base64 ${b64.length > 24 ? b64.slice(0, 24) + "…" : b64})`;
}

// MARK: - The Codes panel

/** The checkboxes, one per type the camera can find (all of zbar's when it doesn't say). */
export function buildCodeTypes() {
  const md = store.caps && store.caps.metadata;
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
  const md = mainMetadata();
  if (!md || store.viewOnly) return;
  const body = { types: [...$("code-types").querySelectorAll("input:checked")].map((i) => i.value) };
  if (md.rectOfInterest) body.rectOfInterest = md.rectOfInterest; // absent would mean the whole picture
  beginCodesCall();
  try {
    await call("/api/session/metadata", body);
  } finally {
    endCodesCall(); // a refused call shows what the server has
  }
}

/** The Codes panel from the main session's state: hidden from a server without metadata. */
export function renderCodeControls() {
  const md = mainMetadata(), inputs = [...$("code-types").querySelectorAll("input")];
  $("codes-group").hidden = !md || !inputs.length;
  if (!md) return;
  const types = Array.isArray(md.types) ? md.types : [];
  if (!store.codesBusy) for (const input of inputs) input.checked = types.includes(input.value);
  const n = store.codeObjects.length;
  $("codes-status").textContent = !types.length ? "Off: tick the codes to look for."
    : n ? `${n} code${n === 1 ? "" : "s"} in view${md.rectOfInterest ? " (in part of the picture)" : ""}.`
    : `Looking for ${types.map(codeTypeName).join(", ")}${md.rectOfInterest ? " in part of the picture" : ""}…`;
}

/** A main session's state: the panel, the boxes over the preview and the list. */
export function renderCodes() {
  showCodes();
  renderRecentCodes();
}

/** The codes in view changed: the boxes and the panel's count. */
export function showCodes() {
  drawCodes();
  renderCodeControls();
}

// MARK: - Boxes over the preview

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
  const overlay = $("code-overlay"), objects = store.codeObjects;
  const shown = !!mainMetadata() && objects.length > 0 && pictureSize().width > 0;
  overlay.hidden = !shown;
  if (!shown) { overlay.replaceChildren(); return; }
  placeCodeOverlay();
  overlay.replaceChildren(...objects.map(codeBox).filter(Boolean));
}

/** The overlay over the frame's own rectangle in the stage (object-fit letterboxes the frame). */
function placeCodeOverlay() {
  const overlay = $("code-overlay");
  if (!overlay.hidden) coverPicture(overlay);
}

// The frame's size is known from the first frame: draw then, and again only when it changes
// (a multipart preview fires "load" for every frame; rebuilding the boxes 30 times a second
// would be work for nothing, and left nothing steady to point at).
let codesDrawnFor = ""; // the frame size the boxes were last drawn for
function frameSizeMaybeChanged() {
  const p = pictureSize(), size = `${p.width}x${p.height}`;
  if (size === codesDrawnFor) return;
  codesDrawnFor = size;
  drawCodes();
}
$("preview").addEventListener("load", frameSizeMaybeChanged);
$("live").addEventListener("resize", frameSizeMaybeChanged); // the WebRTC video's size is known, or changed
if ("ResizeObserver" in window) new ResizeObserver(() => placeCodeOverlay()).observe($("stage"));
else window.addEventListener("resize", placeCodeOverlay);

// MARK: - Recent codes

const items = new WeakMap(); // an entry of store.recentCodes → its <li>, made once

function recentCodeItem({ camera, code: o, when }) {
  const li = document.createElement("li");
  li.dataset.type = o.type;
  li.dataset.value = o.value;
  const type = document.createElement("span");
  type.className = "code-type";
  type.textContent = codeTypeName(o.type);
  const where = cameraTag(store.cameras, camera, "code-camera");
  if (where) type.append(where);
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
export function renderRecentCodes() {
  const md = mainMetadata(), recent = store.recentCodes;
  const looking = !!md && Array.isArray(md.types) && md.types.length > 0;
  $("codes-part").hidden = !md || (!looking && !recent.length);
  $("code-count").textContent = recent.length ? "" : "none yet";
  const list = $("codes");
  const lis = recent.map((entry) => {
    if (!items.has(entry)) items.set(entry, recentCodeItem(entry));
    return items.get(entry);
  });
  lis.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
  while (list.children.length > lis.length) list.lastElementChild.remove();
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
