// The main preview by WebRTC (WHEP): an offer to POST /api/whep, the server's answer with
// every candidate in it (no trickle), and the H.264 track in the <video> with the smallest
// playout delay the browser allows. Whatever fails (no RTCPeerConnection, the POST refused,
// ICE failed, no frame in 5 s, the connection lost later) ends it and tells the caller, which
// shows MJPEG instead.

const FIRST_FRAME_MS = 5000; // connect and decode a frame within this, or use MJPEG
let session = null; // {pc, location, video}
let firstFrameMs = null; // the last start's time to its first frame (for the benchmark)

/** Starts the WebRTC preview in `video`; `onFrame()` at its first frame, `onFail(reason)` once if it ends badly. */
export async function startWebRTC(video, onFrame, onFail) {
  stopWebRTC();
  if (!window.RTCPeerConnection) { onFail("this browser has no WebRTC"); return; }
  const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle" });
  const mine = { pc, location: null, video, failed: false };
  const started = performance.now();
  session = mine;
  const fail = (reason) => {
    if (mine.failed || session !== mine) return;
    mine.failed = true;
    stopWebRTC();
    onFail(reason);
  };
  const timer = setTimeout(() => fail("no frame within 5 s"), FIRST_FRAME_MS);
  try {
    const transceiver = pc.addTransceiver("video", { direction: "recvonly" });
    // As little buffering as the browser allows: the picture follows the camera.
    if ("jitterBufferTarget" in transceiver.receiver) transceiver.receiver.jitterBufferTarget = 0;
    else transceiver.receiver.playoutDelayHint = 0;
    pc.ontrack = (e) => { video.srcObject = e.streams[0] || new MediaStream([e.track]); };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === "failed" || pc.connectionState === "closed") fail(`WebRTC ${pc.connectionState}`);
    };
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc);
    const r = await fetch("/api/whep", { method: "POST", headers: { "Content-Type": "application/sdp" }, body: pc.localDescription.sdp });
    if (r.status !== 201) throw new Error(`POST /api/whep: ${r.status}`);
    mine.location = r.headers.get("Location");
    await pc.setRemoteDescription({ type: "answer", sdp: await r.text() });
    const shown = () => {
      if (session !== mine) return;
      clearTimeout(timer);
      firstFrameMs = performance.now() - started;
      onFrame();
    };
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(shown);
    else video.addEventListener("playing", shown, { once: true });
    video.play().catch(() => {});
  } catch (e) {
    clearTimeout(timer);
    fail(String(e.message || e));
  }
}

/** Ends the WebRTC preview (and its session on the server). */
export function stopWebRTC() {
  const s = session;
  session = null;
  if (!s) return;
  s.pc.close();
  s.video.srcObject = null;
  if (s.location) fetch(s.location, { method: "DELETE", keepalive: true }).catch(() => {});
}

/** From the offer's making to the first frame shown, in ms, of the last start (null before one). */
export function webrtcFirstFrameMs() { return firstFrameMs; }

/** The decoder's figures, for the test: frames decoded so far. */
export async function framesDecoded() {
  if (!session) return 0;
  let n = 0;
  (await session.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "video") n = r.framesDecoded || 0; });
  return n;
}

/** Resolves once ICE gathering completes, or 40 ms after the first candidate (host
 *  candidates come together; Chromium calls gathering complete only some 100 ms later, and
 *  the server learns any candidate the offer lacks from the checks), or after 1 s. */
function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    let soon = null;
    pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") resolve(); });
    pc.addEventListener("icecandidate", (e) => { if (e.candidate && !soon) soon = setTimeout(resolve, 40); });
    setTimeout(resolve, 1000);
  });
}
