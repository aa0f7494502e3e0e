// Movie recording on the main session: the record button (its red dot and running time,
// rendered from the store) and the `recording` event (a finished movie joins the gallery,
// a motion event's movie its event in the list; a recording that ended by itself says why).

import { $, toast, clock } from "./page.js";
import { call } from "./api.js";
import { store, mainRecording, endRecording, setRecordBusy, noteMotionMovie } from "./state.js";
import { loadMovies } from "./gallery.js";

// Why a recording ended by itself, as the `recording` event's `reason` says.
const END_REASONS = {
  maxDuration: "it reached its time limit",
  maxBytes: "it reached its size limit",
  diskFull: "the disk is full (what was written is kept)",
  cameraLost: "the camera was lost (what was recorded is kept)",
  formatChanged: "the camera or its format changed",
  failed: "the encoder failed",
};

let recordTimer = null; // ticks the time shown while recording

/** Seconds since the recording started, counted here from its `startedAt` (state events
 *  come on start and stop only). */
function recordingElapsed(rec) {
  const started = Date.parse(rec.startedAt);
  if (Number.isNaN(started)) return Number(rec.duration) || 0;
  return Math.max(0, (Date.now() - started) / 1000); // a clock behind the server's shows 00:00 a while
}

/** The record button from the main session's state: hidden from a server without movies,
 *  a red dot and the time while recording, disabled while the session doesn't run. */
export function renderRecording() {
  const button = $("record"), rec = mainRecording();
  clearTimeout(recordTimer);
  recordTimer = null;
  button.hidden = !rec;
  if (!rec) return;
  const active = !!rec.active;
  const running = store.state.state === "running";
  button.classList.toggle("recording", active);
  // Stopping stays possible whatever the session does; starting needs it running.
  button.disabled = store.viewOnly || store.recordBusy || (!active && !running);
  if (active) {
    const elapsed = recordingElapsed(rec);
    $("record-time").textContent = clock(elapsed);
    button.setAttribute("aria-label", "Stop recording");
    const lapse = rec.timelapse ? ` · timelapse, ${rec.frames} frame${rec.frames === 1 ? "" : "s"}` : "";
    button.title = `Recording since ${new Date(rec.startedAt).toLocaleTimeString()}${lapse}: click to stop`;
    // Next tick on the next whole second of the recording.
    recordTimer = setTimeout(renderRecording, 1000 - ((elapsed * 1000) % 1000) + 15);
  } else {
    $("record-time").textContent = "REC";
    button.setAttribute("aria-label", "Start recording a movie");
    button.title = running ? "Start recording a movie" : "Start the camera to record";
  }
}

$("record").addEventListener("click", async () => {
  const rec = mainRecording();
  if (!rec || store.viewOnly || store.recordBusy) return;
  setRecordBusy(true);
  try {
    if (rec.active) {
      const movie = await call("/api/session/recording/stop"); // 201 + the Movie
      if (movie) { endRecording(rec.id); loadMovies(); }
    } else {
      await call("/api/session/recording/start"); // answers the state, recording
    }
  } finally {
    setRecordBusy(false);
  }
});

/** `event: recording` (any camera's): a finished movie joins the gallery; the main
 *  session's button resets; a recording that ended by itself says why. */
export function recordingEvent(event) {
  if (event.event !== "finished") return;
  const state = store.state, cameras = store.cameras;
  const onMain = !!state && (!event.camera || event.camera === state.camera.id);
  if (onMain) endRecording(event.id);
  loadMovies();
  if (event.movie) noteMotionMovie(event.movie);
  if (!event.reason || event.reason === "stopped") return;
  // A motion event's movie ends by itself once the motion has (by a reason of its own): no news.
  if (event.movie && event.movie.trigger === "motion" && !END_REASONS[event.reason]) return;
  const cam = cameras.find((c) => c.id === event.camera);
  const where = cam && cameras.length > 1 ? ` on ${cam.name}` : "";
  const why = (END_REASONS[event.reason] || event.reason) + (event.message ? `: ${event.message}` : "");
  const kept = event.movie ? "" : " Nothing was recorded.";
  // A limit reached is what was asked for; the others are trouble.
  toast(`The recording${where} ended: ${why}.${kept}`,
        event.reason === "maxDuration" || event.reason === "maxBytes" ? "info" : undefined);
}
