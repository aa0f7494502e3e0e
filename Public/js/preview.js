// The main session's live MJPEG preview: its stream (retried when it drops, closed while
// the page is hidden), the offline and stopped overlays with the status badge, and where
// the frame is drawn inside the <img> (for tap to focus and the code boxes).

import { $ } from "./page.js";
import { store, setStreamDown, setPaused } from "./state.js";
import { renderTiles } from "./tiles.js";

let retries = 0, retryTimer = null; // the stream's retries since its last frame; the next one

/** Opens the preview stream (not while the page is hidden). */
export function startPreview() {
  clearTimeout(retryTimer);
  if (store.paused) return;
  $("preview").src = "/stream?" + Date.now();
  renderTiles(); // the main camera's tile shows this same request
}

$("preview").addEventListener("load", () => { retries = 0; setStreamDown(false); });
$("preview").addEventListener("error", () => {
  if (store.paused || !$("preview").getAttribute("src")) return;
  setStreamDown(true);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(startPreview, Math.min(5000, 500 * 2 ** retries++));
});

// A hidden page streams nothing: each MJPEG stream holds one of the browser's six
// connections to the server, which every tab of it shares (the event stream stays).
document.addEventListener("visibilitychange", () => {
  if (store.paused === document.hidden) return;
  setPaused(document.hidden);
  if (store.paused) {
    clearTimeout(retryTimer);
    $("preview").removeAttribute("src");
    renderTiles();
  } else {
    retries = 0;
    startPreview();
  }
});

/** The overlays and the status badge, from the main state and the connections. */
export function updateOffline() {
  const state = store.state, eventsDown = store.eventsDown;
  // Stopped (idle, or failed to start) is not offline: it says so and offers to start.
  const halted = !!state && (state.state === "idle" || state.state === "failed");
  const offline = eventsDown || (!halted && (store.streamDown || (state && !state.online)));
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

/** Where the frame is drawn inside the <img> (object-fit: contain letterboxes it). */
export function contentRect() {
  const img = $("preview"), r = img.getBoundingClientRect();
  const iw = img.naturalWidth || 16, ih = img.naturalHeight || 9;
  const scale = Math.min(r.width / iw, r.height / ih);
  const w = iw * scale, h = ih * scale;
  return { left: r.left + (r.width - w) / 2, top: r.top + (r.height - h) / 2, width: w, height: h };
}
