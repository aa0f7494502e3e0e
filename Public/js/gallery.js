// The shutter and the gallery: taking a photo (flash, last-photo thumbnail), and the lists
// of stored photos and movies below the fold, each with download and delete; a motion
// event's movie is marked and shows its snapshot. The lists are the server's (fetched again
// when they change), not kept in the store.

import { $, toast, clock } from "./page.js";
import { call } from "./api.js";
import { store } from "./state.js";

// MARK: - Shutter

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

// MARK: - Photos

/** GET /api/photos into the gallery. */
export async function loadPhotos() {
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
    const cam = p.camera ? store.cameras.find((c) => c.id === p.camera) : null;
    caption.textContent = cam ? cam.name : p.camera || "";
    caption.title = `${caption.textContent ? caption.textContent + ", " : ""}${when}`;
    caption.hidden = !p.camera;
    const actions = document.createElement("div");
    actions.className = "actions";
    const download = document.createElement("a");
    download.href = p.url; download.download = `viewfinder-${p.id}.jpg`; download.textContent = "Download";
    const del = document.createElement("button");
    del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete photo taken ${when}`);
    del.hidden = store.viewOnly;
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

// MARK: - Movies

let moviesAsked = 0; // the latest listing wins, whatever order the answers come in

function formatBytes(n) {
  return n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.ceil(n / 1e3)} kB`;
}

/** GET /api/movies into the gallery (its part hidden from a server before movies). */
export async function loadMovies() {
  const asked = ++moviesAsked;
  let movies = [];
  try {
    const r = await fetch($("movies-motion").checked ? "/api/movies?trigger=motion" : "/api/movies");
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
  $("movie-count").textContent = movies.length ? `(${movies.length})` : $("movies-motion").checked ? "no motion events yet" : "none yet";
  // Keep the items that stay (a movie playing goes on playing); add the new ones in order.
  const list = $("movies");
  const have = new Map([...list.children].map((li) => [li.dataset.id, li]));
  const items = movies.map((m) => {
    const li = have.get(m.id) || movieItem(m);
    have.delete(m.id);
    li.querySelector(".actions button").hidden = store.viewOnly;
    return li;
  });
  items.forEach((li, i) => { if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null); });
  for (const gone of have.values()) {
    const video = gone.querySelector("video");
    if (video) { video.pause(); video.removeAttribute("src"); video.load(); } // lets its connection go
    gone.remove();
  }
}

$("movies-motion").addEventListener("change", loadMovies);

/** When a motion event's movie shows it: its start, peak and end, for the caption's title. */
function eventTimes(event) {
  if (!event) return "";
  const at = (t) => (Number.isFinite(t) ? new Date(t * 1000).toLocaleTimeString() : "?");
  // The movie's peak is a time; the motion event's is {at, score}: either is taken.
  const peakAt = event.peak && typeof event.peak === "object" ? event.peak.at : event.peak;
  const peak = Number.isFinite(peakAt) ? `, peak ${at(peakAt)}` : "";
  return `motion from ${at(event.start)} to ${at(event.end)}${peak}`;
}

function movieItem(m) {
  const li = document.createElement("li");
  li.dataset.id = m.id;
  const motion = m.trigger === "motion";
  li.classList.toggle("motion-movie", motion);
  const when = new Date(m.startedAt).toLocaleString();
  const cam = m.camera ? store.cameras.find((c) => c.id === m.camera) : null;
  const camName = cam ? cam.name : m.camera || "";
  let picture;
  if (m.codec === "mjpeg") {
    // Browsers can't play MJPEG in MP4; players can.
    picture = document.createElement("div");
    picture.className = "movie-unplayable";
    picture.textContent = "MJPEG movie: download it to play it (VLC, mpv, ffplay).";
    if (m.snapshot) picture.style.backgroundImage = `url(${JSON.stringify(m.snapshot)})`;
  } else {
    picture = document.createElement("video");
    picture.controls = true;
    picture.preload = "metadata";
    picture.playsInline = true;
    picture.src = m.url;
    if (m.snapshot) picture.poster = m.snapshot; // the event's moment, not the pre-roll's first frame
    picture.setAttribute("aria-label", `${motion ? "Motion event movie" : "Movie"} recorded ${when}${camName ? ` with ${camName}` : ""}`);
  }
  const caption = document.createElement("span");
  caption.className = "caption";
  const duration = document.createElement("span");
  duration.className = "movie-duration";
  duration.textContent = clock(m.duration);
  const notes = [camName, m.timelapse ? "timelapse" : "", m.reason === "recovered" ? "recovered" : ""].filter(Boolean);
  if (motion) {
    const mark = document.createElement("span");
    mark.className = "motion-mark";
    mark.textContent = "motion";
    caption.append(mark, " ");
  }
  caption.append(duration, notes.length ? ` · ${notes.join(" · ")}` : "");
  caption.title = [camName, when, motion ? eventTimes(m.event) : "", `${m.width}×${m.height}`, String(m.codec).toUpperCase(), formatBytes(m.bytes || 0),
                   m.reason && m.reason !== "stopped" ? `ended: ${m.reason}` : ""].filter(Boolean).join(", ");
  const actions = document.createElement("div");
  actions.className = "actions";
  const download = document.createElement("a");
  download.href = m.url; download.download = `viewfinder-${m.id}.mp4`; download.textContent = "Download";
  const del = document.createElement("button");
  del.type = "button"; del.textContent = "Delete"; del.setAttribute("aria-label", `Delete movie recorded ${when}`);
  del.hidden = store.viewOnly;
  del.addEventListener("click", async () => {
    const r = await fetch(m.url, { method: "DELETE" }).catch(() => null);
    if (!r || !r.ok) toast(`The movie could not be deleted${r ? ` (HTTP ${r.status})` : ""}.`);
    loadMovies();
  });
  actions.append(download, del);
  li.append(picture, caption, actions);
  return li;
}
