// The main session's live preview: WebRTC (H.264, or VP8: webrtc.js) where it connects, MJPEG
// otherwise. A snapshot shows at once while WebRTC connects (not the MJPEG stream: on a slow
// link its frames would fill the link WebRTC's first keyframe needs); the <video> takes over
// at WebRTC's first frame; if WebRTC fails, now or later, MJPEG comes (retried when it drops,
// closed while the page is hidden). Also the offline and stopped overlays with the
// status and transport badges, and where the frame is drawn (for tap to focus, the code boxes
// and the motion overlay).

import { $ } from "./page.js";
import { store, setStreamDown, setPaused, setTransport } from "./state.js";
import { renderTiles } from "./tiles.js";
import { startWebRTC, stopWebRTC, framesDecoded, soundStats, videoCodec, videoHeaderExtensions, webrtcFirstFrameMs, webrtcReconnected, webrtcConnection } from "./webrtc.js";

let retries = 0, retryTimer = null; // the stream's retries since its last frame; the next one
let webrtcFailed = false; // WebRTC failed on this page: MJPEG until the page is shown again
let mjpegBecause = null; // why the page is on MJPEG when WebRTC failed, {short, detail} (the badge says so)

/** Opens the preview (not while the page is hidden): a snapshot now and WebRTC when it has a
 *  frame, or MJPEG where WebRTC cannot play. */
export function startPreview() {
  const tryWebRTC = !store.paused && !webrtcFailed && !!window.RTCPeerConnection;
  if (tryWebRTC) startSnapshot(); else startMJPEG();
  if (!store.paused && !webrtcFailed) {
    startWebRTC($("live"), () => {
      $("live").hidden = false;
      $("preview").hidden = true;
      $("preview").removeAttribute("src");
      setTransport("WebRTC");
      renderTiles();
    }, (why) => {
      console.warn(`WebRTC preview: ${why.detail}; MJPEG instead`);
      webrtcFailed = true;
      mjpegBecause = why;
      showMJPEG();
      renderTransport(); // already on MJPEG (no RTCPeerConnection): the badge still learns why
    }, showListen, stallMs);
  }
}

/** How long the preview's picture may stop, nothing arriving, before its connection is taken for lost: three
 *  frames' time, 1.5 s at least (a slow link's stalled picture still has packets arriving: it is
 *  not lost; a path that carries nothing for 1.5 s at 30 frames a second is); null while no frame is due (the camera not running, or offline). */
function stallMs() {
  const s = store.state;
  if (!s || s.state !== "running" || !s.online || store.paused) return null;
  return Math.max(1500, 3000 / Math.max(0.1, (s.format && s.format.fps) || 1));
}

/** The sound button: shown while WebRTC brings a sound track; the <video> plays muted until
 *  it is pressed (a browser plays sound only after a click), and it mutes again. */
function showListen(has) {
  $("listen").hidden = !has;
  if (!has) { $("live").muted = true; renderListen(); }
}

function renderListen() {
  const on = !$("live").muted;
  $("listen").setAttribute("aria-pressed", String(on));
  $("listen").textContent = on ? "Sound on" : "Sound off";
}

$("listen").addEventListener("click", () => {
  $("live").muted = !$("live").muted;
  if (!$("live").muted) $("live").play().catch(() => {});
  renderListen();
});

function startSnapshot() {
  clearTimeout(retryTimer);
  if (store.paused) return;
  $("preview").src = "/snapshot?" + Date.now();
  renderTiles();
}

function startMJPEG() {
  clearTimeout(retryTimer);
  if (store.paused) return;
  $("preview").src = "/stream?" + Date.now();
  renderTiles(); // the main camera's tile shows this same request
}

function showMJPEG() {
  $("live").hidden = true;
  $("preview").hidden = false;
  setTransport("MJPEG");
  if (!($("preview").getAttribute("src") || "").startsWith("/stream")) startMJPEG();
}

// For the browser tests and bench/live.py: how the preview arrives, WebRTC's frames decoded, its
// codec and time to its first frame, the element shown and the picture's size in it.
window.viewfinderPreview = {
  transport: () => store.transport, badge: () => $("transport").textContent, framesDecoded, soundStats, videoCodec, videoHeaderExtensions,
  firstFrameMs: webrtcFirstFrameMs, reconnected: webrtcReconnected, connection: webrtcConnection,
  element: () => ($("live").hidden ? $("preview") : $("live")),
  size: () => { const s = pictureSize(); return [s.width, s.height]; },
};

$("preview").addEventListener("load", () => {
  retries = 0;
  setStreamDown(false);
  if (!store.transport && ($("preview").getAttribute("src") || "").startsWith("/stream")) setTransport("MJPEG");
});
$("preview").addEventListener("error", () => {
  if (store.paused || !$("preview").getAttribute("src")) return;
  setStreamDown(true);
  clearTimeout(retryTimer);
  retryTimer = setTimeout(startMJPEG, Math.min(5000, 500 * 2 ** retries++));
});

// A hidden page streams nothing: each MJPEG stream holds one of the browser's six
// connections to the server, which every tab of it shares (the event stream stays).
document.addEventListener("visibilitychange", () => {
  if (store.paused === document.hidden) return;
  setPaused(document.hidden);
  if (store.paused) {
    clearTimeout(retryTimer);
    stopWebRTC();
    $("preview").removeAttribute("src");
    $("live").hidden = true;
    $("preview").hidden = false;
    renderTiles();
  } else {
    retries = 0;
    webrtcFailed = false;
    mjpegBecause = null;
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
  renderTransport();
  const badge = $("status");
  if (eventsDown) { badge.textContent = "reconnecting…"; badge.className = "badge offline"; return; }
  if (!state) return;
  badge.textContent = state.online || halted ? state.state : `${state.state} · offline`;
  badge.className = "badge " + (state.online ? "running" : halted ? "" : "offline");
}

/** The transport badge: WebRTC with the stream it plays (the server moves a viewer to the sub
 *  stream when its link cannot carry the main one: told by the picture's size), or MJPEG with
 *  why, when WebRTC failed: "MJPEG · no WebRTC in this browser" (no RTCPeerConnection), "MJPEG ·
 *  no H.264 or VP8 in this browser" (no codec the server sends in its offer: webrtc.js's
 *  refused()), "MJPEG · WebRTC failed"; the title says more. */
function renderTransport() {
  const badge = $("transport");
  let text = store.transport, why = "How the preview arrives: WebRTC (H.264 or VP8) or MJPEG";
  if (store.transport === "WebRTC") {
    const v = $("live"), live = (store.state && store.state.live) || [];
    const sub = live.find((s) => s.name === "sub"), main = live.find((s) => s.name === "main");
    const is = (s) => s && s.width === v.videoWidth && s.height === v.videoHeight;
    if (is(sub) && !is(main)) {
      text = "WebRTC · sub";
      why = `The sub stream (${sub.width}×${sub.height}, ${sub.fps} fps): this link cannot carry the main one now`;
    }
  } else if (store.transport === "MJPEG" && mjpegBecause) {
    text = `MJPEG · ${mjpegBecause.short}`;
    why = `${mjpegBecause.detail}: the preview comes as MJPEG`;
  }
  badge.textContent = text;
  badge.title = why;
  badge.hidden = !store.transport;
}
$("live").addEventListener("resize", renderTransport);

/** The picture's own size, whichever element shows it (0 × 0 before a frame). */
export function pictureSize() {
  const v = $("live");
  if (!v.hidden) return { width: v.videoWidth, height: v.videoHeight };
  return { width: $("preview").naturalWidth, height: $("preview").naturalHeight };
}

/** Where the frame is drawn inside the shown element (object-fit: contain letterboxes it). */
export function contentRect() {
  const el = $("live").hidden ? $("preview") : $("live"), r = el.getBoundingClientRect();
  const size = pictureSize(), iw = size.width || 16, ih = size.height || 9;
  const scale = Math.min(r.width / iw, r.height / ih);
  const w = iw * scale, h = ih * scale;
  return { left: r.left + (r.width - w) / 2, top: r.top + (r.height - h) / 2, width: w, height: h };
}

/** Places `el` (absolutely positioned in the stage) over the frame's own rectangle: what is
 *  drawn in it in % of its size is then in the picture's normalized coordinates. */
export function coverPicture(el) {
  const stage = $("stage"), s = stage.getBoundingClientRect(), r = contentRect();
  Object.assign(el.style, {
    left: `${r.left - s.left - stage.clientLeft}px`, top: `${r.top - s.top - stage.clientTop}px`,
    width: `${r.width}px`, height: `${r.height}px`,
  });
}
