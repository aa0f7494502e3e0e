// Push-to-talk (issue 37): while the Talk button is held, the browser's microphone goes to the
// main camera's speaker by WHIP — an offer that sends Opus, POSTed to /api/talk — and when it
// is let go the talk ends (DELETE its Location). One talker a camera: the server answers 409
// while someone else talks, and the button says so.

import { $ } from "./page.js";
import { store } from "./state.js";
import { gathered, useICEServers } from "./webrtc.js";

let talk = null; // the talk under way: {pc, stream, location, ended}

/** The button: shown when the main camera has a speaker (and the browser a microphone API). */
export function renderTalk() {
  const main = store.state && store.state.camera && store.cameras.find((c) => c.id === store.state.camera.id);
  $("talk").hidden = !(main && main.speaker && navigator.mediaDevices && window.RTCPeerConnection);
  $("talk").disabled = store.viewOnly;
}

function pressed(on, why) {
  $("talk").setAttribute("aria-pressed", String(on));
  $("talk").classList.toggle("talking", on);
  $("talk").title = why || "Hold to talk through the camera's speaker";
}

async function start() {
  if (talk || store.viewOnly) return;
  const mine = { pc: null, stream: null, location: null, ended: false };
  talk = mine;
  pressed(true);
  try {
    mine.stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true } });
    if (mine.ended) { end(mine); return; }
    const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle" });
    mine.pc = pc;
    for (const track of mine.stream.getAudioTracks()) pc.addTransceiver(track, { direction: "sendonly" });
    await useICEServers(pc);
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    const r = await fetch("/api/talk", { method: "POST", headers: { "Content-Type": "application/sdp" }, body: pc.localDescription.sdp });
    if (r.status !== 201) {
      const body = await r.json().catch(() => null);
      throw new Error((body && body.error && body.error.message) || `POST /api/talk: ${r.status}`);
    }
    mine.location = r.headers.get("Location");
    await pc.setRemoteDescription({ type: "answer", sdp: await r.text() });
    if (mine.ended) end(mine); // let go while it was being set up
  } catch (e) {
    console.warn(`push-to-talk: ${e.message || e}`);
    stop(String(e.message || e));
  }
}

function stop(why) {
  const t = talk;
  talk = null;
  pressed(false, why);
  if (!t) return;
  t.ended = true;
  end(t);
}

/** Closes what the talk has so far (again when more came after it was let go). */
function end(t) {
  if (t.pc) t.pc.close();
  if (t.stream) t.stream.getTracks().forEach((track) => track.stop());
  if (t.location) {
    fetch(t.location, { method: "DELETE", keepalive: true }).catch(() => {});
    t.location = null;
  }
}

// Held by a pointer (mouse, touch, pen) or by Space/Enter: talking lasts as long as the hold.
$("talk").addEventListener("pointerdown", (e) => { e.preventDefault(); $("talk").setPointerCapture(e.pointerId); start(); });
for (const type of ["pointerup", "pointercancel", "lostpointercapture"]) $("talk").addEventListener(type, () => { if (talk) stop(); });
$("talk").addEventListener("keydown", (e) => { if ((e.key === " " || e.key === "Enter") && !e.repeat) { e.preventDefault(); start(); } });
$("talk").addEventListener("keyup", (e) => { if (e.key === " " || e.key === "Enter") stop(); });
window.addEventListener("pagehide", () => stop());

// For the browser test: whether a talk is set up, and its server Location.
window.viewfinderTalk = { talking: () => !!(talk && talk.location), location: () => talk && talk.location };
