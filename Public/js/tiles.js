// The strip of camera tiles: every camera, each running one live, with a button to start or
// stop it; click one to make it the main view. Rendered from the store's cameras; its
// picture timers and WebRTC sessions are its own.

import { $ } from "./page.js";
import { call, cameraPath } from "./api.js";
import { store } from "./state.js";
import { openWHEP, closeWHEP, framesDecoded } from "./webrtc.js";

// A running camera other than the main one plays its sub stream (640 wide, 15 fps) by WebRTC:
// once answered a WHEP session holds no HTTP connection, so any number of tiles play at full
// rate. Where WebRTC cannot play (no RTCPeerConnection, the POST refused, no frame in 5 s, the
// connection lost), the tile falls back to MJPEG at TILE_FPS — each such stream holds one of
// the six connections a browser allows a server (the event stream and the preview take two):
// store.tileStreamLimit of them — and past those to snapshots.
const TILE_FPS = 5;
const tileTimers = new Map(); // camera id → snapshot refresh or stream retry timer
const tileSessions = new Map(); // camera id → the WHEP session its tile plays
// Cameras whose tile's WebRTC failed: MJPEG or snapshots until the page is shown again (as the
// preview does) or the camera runs again (a stop can end its session before its state says so).
const webrtcFailed = new Set();

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
    const c = store.cameras.find((x) => x.id === li.dataset.camera);
    if (store.viewOnly || !c || c.main) return;
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
    const c = store.cameras.find((x) => x.id === li.dataset.camera);
    if (store.viewOnly || !c) return;
    call(`${cameraPath(c.id)}/${c.state === "running" || c.state === "interrupted" ? "stop" : "start"}`);
  });
  li.append(pick, power);
  return li;
}

// For the browser tests (Tests/browser/test_grid.py): a tile's WebRTC frames decoded so far,
// null while it plays none.
window.viewfinderTiles = {
  framesDecoded: (id) => (tileSessions.has(id) ? framesDecoded(tileSessions.get(id)) : null),
};

/** The picture a tile shows: the main camera's is the preview's own request (the browser
 *  loads the same URL once); another running camera's is its sub stream by WebRTC, or where
 *  that failed its MJPEG stream at a few frames a second, or its snapshot once the live tiles
 *  are used up. */
function tileSource(cam, live) {
  if (store.paused || cam.state !== "running") return null;
  if (!cam.main && window.RTCPeerConnection && !webrtcFailed.has(cam.id)) {
    return { url: `/api/cameras/${encodeURIComponent(cam.id)}/whep?stream=sub`, webrtc: true };
  }
  if (cam.main) {  // by WebRTC the preview has no URL to share: the tile copies its picture
    const src = $("preview").getAttribute("src");
    return src ? { url: src } : { url: "#preview", copy: true };
  }
  if (live) return { url: `/cameras/${encodeURIComponent(cam.id)}/stream?fps=${TILE_FPS}` };
  return { url: `/cameras/${encodeURIComponent(cam.id)}/snapshot`, snapshot: true };
}

export function renderTiles() {
  const strip = $("tiles"), cameras = store.cameras, viewOnly = store.viewOnly;
  strip.hidden = cameras.length < 2; // one camera: the main view says it all
  let live = 0;
  // Hidden (every picture closes) or a camera not running: WebRTC is tried afresh next time.
  if (store.paused) webrtcFailed.clear();
  for (const cam of cameras) if (cam.state !== "running") webrtcFailed.delete(cam.id);
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
    // One camera: the strip is hidden and loads nothing (a picture nobody sees costs a slow
    // link what the preview needs).
    const source = strip.hidden ? null : tileSource(cam, !cam.main && cam.state === "running" && live < store.tileStreamLimit);
    if (source && !cam.main && !source.snapshot && !source.webrtc) live++; // MJPEG holds a connection
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
  if (!source || !source.webrtc) closeTileVideo(li, cam.id);
  if (!source || source.webrtc) {
    clearTimeout(tileTimers.get(cam.id)); tileTimers.delete(cam.id);
    if (img) { img.removeAttribute("src"); img.remove(); } // closes its stream
    if (source) showTileVideo(li, cam.id, source.url);
    return;
  }
  const want = source.url;
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
  if (source.copy) {
    const refresh = () => {
      const copy = copyOfPreview();
      if (copy) img.src = copy;
      tileTimers.set(cam.id, setTimeout(refresh, 2000));
    };
    refresh();
  } else if (source.snapshot) {
    const refresh = () => {
      img.src = `${want}?${Date.now()}`;
      tileTimers.set(cam.id, setTimeout(refresh, 2000));
    };
    refresh();
  } else {
    img.src = img.dataset.kind === "stream" && Number(img.dataset.retries) > 0 ? `${want}&${Date.now()}` : want;
  }
}

// The main camera's tile while the preview plays by WebRTC: the preview's own picture, drawn
// small every 2 s — no request (a full-size snapshot every 2 s took a sixth of a 1 Mbit/s link
// from the preview beside it, in bursts that cost it frames).
const copier = document.createElement("canvas");
function copyOfPreview() {
  const video = $("live");
  if (video.hidden || !video.videoWidth) return null;
  copier.width = 160;
  copier.height = Math.round((160 * video.videoHeight) / video.videoWidth);
  copier.getContext("2d").drawImage(video, 0, 0, copier.width, copier.height);
  return copier.toDataURL("image/jpeg", 0.8);
}

/** Plays `url`'s sub stream by WebRTC in the tile (muted: a tile has no sound); once open it
 *  stays, whatever renders, until closeTileVideo(). A failure falls back to MJPEG. */
function showTileVideo(li, id, url) {
  if (tileSessions.has(id)) return;
  const video = document.createElement("video");
  video.muted = true; video.autoplay = true; video.playsInline = true; // autoplay needs muted
  video.disablePictureInPicture = true;
  li.querySelector(".tile-picture").append(video);
  const session = openWHEP(url, video, {
    onFail: (why) => {
      console.warn(`WebRTC tile ${id}: ${why.detail}; MJPEG instead`);
      tileSessions.delete(id);
      video.remove();
      webrtcFailed.add(id);
      renderTiles();
    },
  });
  if (session) tileSessions.set(id, session);
}

/** Ends the tile's WebRTC session (DELETE at the server, the peer closed) and its <video>. */
function closeTileVideo(li, id) {
  const session = tileSessions.get(id);
  tileSessions.delete(id);
  closeWHEP(session);
  const video = li.querySelector(".tile-picture video");
  if (video) video.remove();
}
