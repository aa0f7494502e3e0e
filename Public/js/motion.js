// Motion detection on the main session: the Motion panel (detect, threshold, record events,
// the masks' buttons and what it sees now), the overlay over the preview (the moving area's
// outline while something moves, the masks, the mask being drawn), drawing masks by clicking
// on the picture, and the list of the latest motion events. All rendered from the store: the
// masks drawn are the state's; the page keeps only the one being drawn (store.maskDraft).

import { $, cameraTag, toast } from "./page.js";
import { call, cameraPath } from "./api.js";
import { store, mainMotion, beginMotionCall, endMotionCall, setMaskDraft } from "./state.js";
import { coverPicture, pictureSize } from "./preview.js";

const SVG = "http://www.w3.org/2000/svg";
const SAME_POINT_PX = 6; // the two clicks of a double-click land here: one vertex, not two

/** A score or threshold (percent of the picture) for people. */
function percent(value) {
  const n = Number(value);
  if (!Number.isFinite(n)) return "–";
  return `${n < 10 ? n.toFixed(1) : Math.round(n)}%`;
}

/** A mask's corner as [x, y] (the API's form; an {x, y} object is taken too), or null. */
function corner(p) {
  const [x, y] = Array.isArray(p) ? p : p && typeof p === "object" ? [p.x, p.y] : [];
  return Number.isFinite(Number(x)) && Number.isFinite(Number(y)) ? [Number(x), Number(y)] : null;
}

/** The state's masks that can be drawn (polygons of three corners or more), as [[x, y], …]. */
function masksOf(md) {
  if (!md || !Array.isArray(md.masks)) return [];
  return md.masks.map((m) => (Array.isArray(m) ? m.map(corner) : []))
    .filter((m) => m.length >= 3 && m.every(Boolean));
}

/** The moving area, cut to the picture, or null without one. */
function motionBox(md) {
  const b = md && md.active ? md.box : null;
  if (!b || ![b.x, b.y, b.width, b.height].every((v) => Number.isFinite(Number(v)))) return null;
  const x0 = Math.max(0, Number(b.x)), y0 = Math.max(0, Number(b.y));
  const x1 = Math.min(1, Number(b.x) + Number(b.width)), y1 = Math.min(1, Number(b.y) + Number(b.height));
  return x1 > x0 && y1 > y0 ? { x: x0, y: y0, width: x1 - x0, height: y1 - y0 } : null;
}

// MARK: - Calls

/** Changes the main camera's motion detection; its answer (the state) goes to the store. By
 *  the camera's own path, not /api/session's: a mask drawn on one camera's picture must not
 *  land on another's when the main camera switches while it is on its way. */
async function sendMotion(body) {
  if (!mainMotion() || store.viewOnly) return null;
  beginMotionCall();
  try {
    return await call(`${cameraPath(store.state.camera.id)}/motion`, body);
  } finally {
    endMotionCall(); // a refused call shows what the server has
  }
}

// MARK: - The Motion panel

let thresholdTyped = false; // a threshold is being typed: states coming meanwhile don't overwrite it

/** The panel from the main session's state: hidden from a server without motion detection. */
export function renderMotionControls() {
  const md = mainMotion();
  $("motion-group").hidden = !md;
  if (!md) return;
  if (!store.motionBusy) {
    $("motion-enabled").checked = !!md.enabled;
    $("motion-record").checked = !!md.record;
    if (!thresholdTyped) $("motion-threshold").value = Number.isFinite(md.threshold) ? md.threshold : "";
  }
  const indicator = $("motion-indicator"), moving = !!md.enabled && !!md.active;
  indicator.classList.toggle("active", moving);
  indicator.textContent = !md.enabled ? "off" : `${moving ? "moving" : "still"} · ${percent(md.score)}`;
  indicator.title = !md.enabled ? "Motion detection is off"
    : `${percent(md.score)} of the unmasked picture changed (motion from ${percent(md.threshold)})`
      + (moving && Number.isFinite(md.since) ? `; moving since ${new Date(md.since * 1000).toLocaleTimeString()}` : "");
  const draft = store.maskDraft, n = masksOf(md).length;
  $("mask-edit").setAttribute("aria-pressed", String(!!draft));
  $("mask-edit").textContent = draft ? "Done" : "Edit masks";
  $("mask-close").hidden = !draft;
  $("mask-close").disabled = !draft || draft.length < 3;
  $("mask-clear").disabled = !n && !(draft && draft.length);
  $("motion-status").textContent = draft
    ? (draft.length < 3 ? `Click the picture to add a mask's corners (${draft.length} so far).`
      : `${draft.length} corners: double-click or Close polygon to add this mask.`)
    : n ? `${n} mask${n === 1 ? "" : "s"}: motion there is ignored.`
    : md.enabled ? "Watching the whole picture." : "";
}

$("motion-enabled").addEventListener("change", (e) => sendMotion({ enabled: e.target.checked }));
$("motion-record").addEventListener("change", (e) => sendMotion({ record: e.target.checked }));
$("motion-threshold").addEventListener("input", () => { thresholdTyped = true; });
$("motion-threshold").addEventListener("change", (e) => {
  thresholdTyped = false;
  const threshold = Number(e.target.value);
  // Half typed or emptied: show what the server has. Its range is the server's to judge.
  if (e.target.value === "" || !Number.isFinite(threshold)) renderMotionControls();
  else sendMotion({ threshold });
});
$("motion-threshold").addEventListener("blur", () => {
  if (!thresholdTyped) return;
  thresholdTyped = false; // left without changing it
  renderMotionControls();
});

// MARK: - The overlay: the moving area and the masks

/** Draws the outline, the masks and the mask being drawn over the frame (nothing from a
 *  server without motion, or before a frame has shown). */
export function drawMotion() {
  const overlay = $("motion-overlay"), md = mainMotion(), draft = store.maskDraft;
  const size = pictureSize(), masks = masksOf(md), box = motionBox(md);
  const shown = !!md && size.width > 0 && (masks.length > 0 || !!draft || !!box);
  overlay.hidden = !shown;
  overlay.classList.toggle("editing", !!draft);
  // Only something to point at while masks are drawn; otherwise a picture over the picture.
  overlay.setAttribute("aria-hidden", String(!draft));
  if (draft) overlay.setAttribute("aria-label", "Mask editor: click the picture to add corners, double-click to close");
  else overlay.removeAttribute("aria-label");
  if (!shown) { $("motion-masks").replaceChildren(); $("motion-box").hidden = true; return; }
  coverPicture(overlay);
  drawMasks(masks, draft, size);
  const el = $("motion-box");
  el.hidden = !box;
  if (!box) return;
  Object.assign(el.style, { left: `${box.x * 100}%`, top: `${box.y * 100}%`, width: `${box.width * 100}%`, height: `${box.height * 100}%` });
  el.classList.toggle("label-below", box.y < 0.08);
  $("motion-label").textContent = `motion ${percent(md.score)}`;
}

/** The masks as SVG polygons in the picture's own pixels (the overlay has its shape, so the
 *  corners' dots stay round), the one being drawn dashed, with its corners. */
function drawMasks(masks, draft, size) {
  const svg = $("motion-masks"), W = size.width, H = size.height;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const polygon = (points, className) => {
    const p = document.createElementNS(SVG, "polygon");
    p.setAttribute("class", className);
    p.setAttribute("points", points.map(([x, y]) => `${x * W},${y * H}`).join(" "));
    return p;
  };
  const shapes = masks.map((m) => polygon(m, "mask"));
  if (draft && draft.length) {
    shapes.push(polygon(draft, "mask-draft"));
    for (const [x, y] of draft) {
      const dot = document.createElementNS(SVG, "circle");
      dot.setAttribute("class", "mask-corner");
      dot.setAttribute("cx", x * W); dot.setAttribute("cy", y * H); dot.setAttribute("r", Math.max(W, H) / 160);
      shapes.push(dot);
    }
  }
  svg.replaceChildren(...shapes);
}

// The frame's size is known from the first frame: draw then, and again only when it changes
// (a multipart preview fires "load" for every frame), as codes.js does.
let drawnFor = ""; // the frame size the overlay was last drawn for
function frameSizeMaybeChanged() {
  const p = pictureSize(), size = `${p.width}x${p.height}`;
  if (size === drawnFor) return;
  drawnFor = size;
  drawMotion();
}
function placeMotionOverlay() {
  if (!$("motion-overlay").hidden) coverPicture($("motion-overlay"));
}
$("preview").addEventListener("load", frameSizeMaybeChanged);
$("live").addEventListener("resize", frameSizeMaybeChanged);
if ("ResizeObserver" in window) new ResizeObserver(placeMotionOverlay).observe($("stage"));
else window.addEventListener("resize", placeMotionOverlay);

// MARK: - Drawing masks

/** Adds the polygon drawn to the state's masks. True once the server has it; a refused or
 *  failed call keeps the corners to try again. */
async function closePolygon() {
  const points = store.maskDraft;
  if (!points || points.length < 3) {
    if (points && points.length) toast("A mask needs three corners or more.", "info");
    return false;
  }
  if (!(await sendMotion({ masks: [...masksOf(mainMotion()), points] }))) return false;
  // The state's masks have it now. Corners clicked while it was on its way start the next one.
  const now = store.maskDraft;
  if (now) setMaskDraft(now[points.length - 1] === points[points.length - 1] ? now.slice(points.length) : now);
  return true;
}

const overlay = $("motion-overlay");
// While masks are drawn the overlay takes the clicks on the picture (CSS: .editing): they are
// corners, not taps to focus or pinches, which controls.js reads from the stage they'd bubble to.
for (const type of ["pointerdown", "pointerup", "pointercancel"]) {
  overlay.addEventListener(type, (e) => { if (store.maskDraft) e.stopPropagation(); });
}
overlay.addEventListener("click", (e) => {
  const draft = store.maskDraft;
  if (!draft) return;
  e.stopPropagation();
  const r = overlay.getBoundingClientRect();
  if (!r.width || !r.height) return;
  const norm = (t) => Math.round(Math.min(1, Math.max(0, t)) * 10000) / 10000; // no more digits than a picture has pixels
  const x = norm((e.clientX - r.left) / r.width), y = norm((e.clientY - r.top) / r.height);
  const last = draft[draft.length - 1];
  if (last && Math.hypot((last[0] - x) * r.width, (last[1] - y) * r.height) < SAME_POINT_PX) return;
  setMaskDraft([...draft, [x, y]]);
});
overlay.addEventListener("dblclick", (e) => {
  if (!store.maskDraft) return;
  e.preventDefault();
  e.stopPropagation();
  closePolygon();
});

$("mask-edit").addEventListener("click", async () => {
  if (!mainMotion() || store.viewOnly) return;
  if (!store.maskDraft) { setMaskDraft([]); return; }
  // Done: a polygon with enough corners is added, as Close polygon would; fewer are dropped.
  if (store.maskDraft.length >= 3 && !(await closePolygon())) return;
  setMaskDraft(null);
});
$("mask-close").addEventListener("click", closePolygon);
$("mask-clear").addEventListener("click", () => {
  if (store.maskDraft && store.maskDraft.length) setMaskDraft([]); // the unfinished one goes too
  if (masksOf(mainMotion()).length) sendMotion({ masks: [] });
});
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || !store.maskDraft) return;
  // Escape drops the unfinished polygon; with none, it ends the drawing.
  setMaskDraft(store.maskDraft.length ? [] : null);
});

// MARK: - Motion events

const items = new WeakMap(); // an entry of store.motionEvents → its <li>, made once (entries are replaced, not changed)

function eventItem({ camera, start, end, score, peak, movie }) {
  const li = document.createElement("li");
  li.dataset.camera = camera;
  li.dataset.start = String(start);
  li.classList.toggle("ongoing", end === null);
  const began = new Date(start * 1000);
  let thumb = document.createElement("span");
  if (movie && movie.snapshot) {
    thumb = document.createElement("a");
    thumb.href = movie.url; thumb.target = "_blank"; thumb.rel = "noopener";
    const img = document.createElement("img");
    img.src = movie.snapshot; img.alt = `The movie of the motion at ${began.toLocaleTimeString()}`;
    thumb.append(img);
  }
  thumb.classList.add("motion-thumb");
  const time = document.createElement("time");
  time.dateTime = began.toISOString();
  time.textContent = began.toLocaleTimeString();
  time.title = began.toLocaleString();
  const what = document.createElement("span");
  what.className = "motion-what";
  const seconds = end === null ? 0 : Math.max(0, end - start);
  what.textContent = end === null ? "moving…" : `${seconds < 10 ? seconds.toFixed(1) : Math.round(seconds)} s`;
  const where = cameraTag(store.cameras, camera, "motion-camera");
  if (where) what.append(where);
  const figure = document.createElement("span");
  figure.className = "motion-score";
  figure.textContent = peak && Number.isFinite(peak.score) ? `peak ${percent(peak.score)}` : percent(score);
  li.append(thumb, time, what, figure);
  return li;
}

/** The list, newest first: shown while the main session detects motion or once an event came. */
export function renderMotionEvents() {
  const md = mainMotion(), events = store.motionEvents;
  $("motion-part").hidden = !events.length && !(md && md.enabled);
  $("motion-count").textContent = events.length ? "" : "none yet";
  const list = $("motion-events");
  const lis = events.map((entry) => {
    if (!items.has(entry)) items.set(entry, eventItem(entry));
    return items.get(entry);
  });
  lis.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
  while (list.children.length > lis.length) list.lastElementChild.remove();
}

// MARK: - Rendering

/** A main session's state: the panel, the overlay and the list. */
export function renderMotion() {
  showMotion();
  renderMotionEvents();
}

/** The motion on the main session, or the mask being drawn, changed: the overlay and the panel. */
export function showMotion() {
  drawMotion();
  renderMotionControls();
}
