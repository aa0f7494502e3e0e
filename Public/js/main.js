// Viewfinder's camera page, the entry module: it wires the sections to the store (which
// renderer runs when what changes, in order), connects the event stream, polls the live
// figures and starts everything. The page: the main session's live MJPEG preview plus every
// session control, generated from the active camera's capabilities, and a strip of tiles with
// every camera (each running one live), all kept in sync with the server over /api/events.
// ES modules, no build step, no dependencies.

import { call, loadCameras, loadMe, openEvents, pollState } from "./api.js";
import { store, subscribe, applyState, applyMetadata, applyMotion, setMainState, setEventsDown,
         setTileStreamLimit } from "./state.js";
import { contentRect, startPreview, updateOffline } from "./preview.js";
import { renderTiles } from "./tiles.js";
import { buildControls, ensureControls, renderControls, renderRole } from "./controls.js";
import { recordingEvent, renderRecording } from "./recording.js";
import { loadMovies, loadPhotos } from "./gallery.js";
import { renderCodeControls, renderCodes, renderRecentCodes, showCodes } from "./codes.js";
import { renderMotion, renderMotionControls, renderMotionEvents, showMotion } from "./motion.js";
import { renderSound, showLevel } from "./sound.js";
import { renderTalk } from "./talk.js";
import { renderConnect } from "./connect.js";

// Opened as http://user:password@host/ the page would carry the credentials into every
// relative URL, which fetch refuses; the browser has signed in by now, so drop them. The
// document being left opens nothing (no stream holds one of the browser's six connections
// to this host while the next document asks for its own).
const leaving = !!new URL(document.URL).username;
if (leaving) {
  location.replace(location.origin + location.pathname + location.search + location.hash);
}

// MARK: - What renders when the store changes

// A new main state: the controls for its camera first (the Codes panel's boxes among
// them), then the overlays, the record button, the codes, motion and the controls' values.
subscribe("main", ensureControls);
subscribe("main", updateOffline);
subscribe("main", renderRecording);
subscribe("main", renderCodes);
subscribe("main", renderMotion);
subscribe("main", renderControls);
subscribe("main", renderSound);
subscribe("main", renderTalk);
subscribe("cameras", renderTiles);
subscribe("cameras", renderTalk);
subscribe("role", renderTalk);
subscribe("unknown-camera", () => loadCameras());
subscribe("connection", updateOffline);
subscribe("role", renderRole);
subscribe("role", renderRecording);
subscribe("role", renderTiles);
subscribe("recording", renderRecording);
subscribe("codes", showCodes);
subscribe("codes-busy", renderCodeControls);
subscribe("recent-codes", renderRecentCodes);
subscribe("motion", showMotion);
subscribe("motion-busy", renderMotionControls);
subscribe("motion-events", renderMotionEvents);
subscribe("mask-draft", showMotion);
subscribe("tiles", renderTiles);
subscribe("services", renderConnect);
subscribe("main", renderConnect);

// MARK: - Events

function connectEvents() {
  openEvents({
    open() {
      // Connected, or back after a drop: states may have changed since the cameras were
      // listed (or while away), and the first event is the main session's only: list again.
      // A recording may have ended while away: list the movies again too.
      if (store.eventsDown && store.cameras.length) { loadCameras(); loadMovies(); }
      setEventsDown(false);
    },
    state(s) { setEventsDown(false); applyState(s); },
    photo() { loadPhotos(); },
    recording: recordingEvent,
    metadata: applyMetadata,
    motion: applyMotion,
    level: showLevel,
    error() { setEventsDown(true); }, // it reconnects by itself
  });
}

// MARK: - The console's names

// What the one classic script (app.js) had as globals, by the same names, for a person at the
// console and for Tests/browser/test_page.py: read `state` and `cameras`, set
// `tileStreamLimit`, call the rest. Reads and writes go through the store as everywhere else.
Object.defineProperties(window, {
  state: { get: () => store.state },
  cameras: { get: () => store.cameras },
  tileStreamLimit: { get: () => store.tileStreamLimit, set: setTileStreamLimit },
  call: { value: call },
  applyState: { value: applyState },
  render: { value: setMainState },
  buildControls: { value: buildControls },
  renderTiles: { value: renderTiles },
  contentRect: { value: contentRect },
});

// MARK: - Start

// Live figures (fps, viewers) change without events; refresh them every two seconds.
setInterval(() => { if (!leaving) pollState(); }, 2000);

if (!leaving) loadMe().then(loadCameras).then(() => { connectEvents(); startPreview(); loadPhotos(); loadMovies(); });
