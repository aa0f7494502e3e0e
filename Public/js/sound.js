// The microphone of the main camera (issue 37): its mute (the server's audio connection: every
// output then gets silence), its capture gain (the mixer's steps, or digital), a level meter fed
// by the server's `level` events, and why there is no sound when there is none.

import { $, throttled } from "./page.js";
import { call } from "./api.js";
import { store } from "./state.js";

let dragging = false;

/** The Microphone panel from the main state's `audio` (hidden for a camera without one). */
export function renderSound() {
  const s = store.state;
  const audio = s && s.audio;
  $("sound-group").hidden = !audio;
  if (!audio) return;
  const cam = store.cameras.find((c) => c.id === s.camera.id);
  const gain = cam && cam.audio && cam.audio.gainDb;
  if (gain) { $("mic-gain").min = gain.min; $("mic-gain").max = gain.max; $("mic-gain").step = gain.step; }
  if (!dragging) $("mic-gain").value = audio.gainDb;
  $("mic-gain-value").textContent = `${audio.gainDb >= 0 ? "+" : ""}${audio.gainDb.toFixed(1)} dB${audio.gainControl === "digital" ? " (digital)" : ""}`;
  $("mic-mute").setAttribute("aria-pressed", String(audio.muted));
  $("mic-mute").textContent = audio.muted ? "Muted" : "Mute";
  $("mic-device").textContent = audio.device;
  $("mic-reason").hidden = !audio.error;
  $("mic-reason").textContent = audio.error ? `No sound: ${audio.error}` : "";
  if (!audio.running) $("mic-level").value = -60;
}

/** A `level` event: the meter follows the main camera's microphone. */
export function showLevel(event) {
  const s = store.state;
  if (!s || !s.camera || event.camera !== s.camera.id) return;
  $("mic-level").value = Math.max(-60, event.peakDb);
  $("mic-level").title = `peak ${event.peakDb.toFixed(1)} dBFS, RMS ${event.rmsDb.toFixed(1)} dBFS`;
}

$("mic-mute").addEventListener("click", () =>
  call("/api/session/audio", { muted: !(store.state && store.state.audio && store.state.audio.muted) }));
const sendGain = throttled((gainDb) => call("/api/session/audio", { gainDb }));
$("mic-gain").addEventListener("input", (e) => { dragging = true; sendGain(Number(e.target.value)); });
$("mic-gain").addEventListener("change", () => { dragging = false; });
