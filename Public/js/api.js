// Talking to the server: session calls (their answers go to the store, their errors to the
// toast), the camera list, who we are, the state poll and the event stream. What comes
// back is handed to state.js; nothing here renders.

import { toast } from "./page.js";
import { store, applyState, setCameras, setRole, setServices } from "./state.js";

/** POSTs a session call; the SessionState it answers goes to the store; shows any error. */
export async function call(path, body) {
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

/** A camera's own session, by id. */
export function cameraPath(id) { return `/api/cameras/${encodeURIComponent(id)}/session`; }

let loadingCameras = null; // the listing on its way: callers meanwhile share it
/** GET /api/cameras into the store. */
export function loadCameras() {
  if (!loadingCameras) {
    loadingCameras = fetch("/api/cameras")
      .then((r) => { if (!r.ok) throw new Error(); return r.json(); })
      .then((body) => { setCameras(body.cameras); setServices(body.services); })
      .catch(() => toast("Cameras could not be listed."))
      .finally(() => { loadingCameras = null; });
  }
  return loadingCameras;
}

/** Who we are (GET /api/me) into the store. The browser signs every same-origin request in
 *  (its own Basic/Digest prompt); the page keeps no password. */
export async function loadMe() {
  try {
    const r = await fetch("/api/me");
    if (!r.ok) return;
    setRole(await r.json());
  } catch (_) { /* offline: the event stream shows it */ }
}

/** Live figures (fps, viewers) change without events: GET /api/session, unless an event
 *  came while it was on its way (that one is newer). */
export async function pollState() {
  const asked = performance.now();
  try {
    const r = await fetch("/api/session");
    const s = r.ok ? await r.json() : null;
    if (s && store.lastMainAt <= asked) applyState(s);
  } catch (_) { /* the event stream shows we're offline */ }
}

/** Opens /api/events (it reconnects by itself) and hands each event, its JSON parsed, to
 *  `on`: open(), error(), state(s), photo(), recording(event), metadata(event), motion(event),
 *  level(event). An event
 *  whose JSON does not parse is dropped. */
export function openEvents(on) {
  const events = new EventSource("/api/events?levels=1");
  const parsed = (handler) => (e) => {
    let event = null;
    try { event = JSON.parse(e.data); } catch (_) { return; }
    if (event) handler(event);
  };
  events.addEventListener("open", () => on.open());
  events.addEventListener("state", (e) => on.state(JSON.parse(e.data)));
  events.addEventListener("photo", () => on.photo());
  events.addEventListener("recording", parsed(on.recording));
  events.addEventListener("metadata", parsed(on.metadata)); // servers before the metadata output send none
  events.addEventListener("motion", parsed(on.motion)); // servers before motion detection send none
  events.addEventListener("level", parsed(on.level)); // the microphones' meters (servers before sound send none)
  events.addEventListener("error", () => on.error());
}
