// The main preview by WebRTC (WHEP): an offer to POST /api/whep sent at once, the browser's
// candidates trickled after it as they come (PATCH of its Location, RFC 9725), the server's
// answer with every candidate of its own, and the H.264 track (VP8 where the browser has no H.264)
// — with the camera's sound in Opus when it has a microphone — in the <video> with the
// smallest playout delay the browser allows. The <video> starts muted (browsers play sound only after a click): the page's
// sound button unmutes it. Whatever fails (no RTCPeerConnection, the POST refused,
// ICE failed, no frame in 5 s) ends it and tells the caller why, which shows MJPEG instead (and
// the reason on its badge). A connection lost after it played (failed, disconnected for
// 1.5 s, or its picture stopped and nothing arrived for 1.5 s while the camera runs: a laptop
// moved from Wi-Fi to LTE, a network gone) is offered again, up to 3 times, before MJPEG: the last picture stays until the
// new session's answer. The camera tiles open the same kind of
// session (openWHEP) for each other camera's sub stream, picture only.

const FIRST_FRAME_MS = 5000; // connect and decode a frame within this, or use MJPEG
const DISCONNECTED_MS = 1500; // disconnected this long after playing: the connection is lost
const REOFFERS = 3; // a lost connection is offered again this many times before MJPEG
let session = null; // the preview's: openWHEP()'s {pc, location, video, …}
let firstFrameMs = null; // the last start's time to its first frame (for the benchmark)

/** Why WebRTC cannot play: `short` for the badge ("MJPEG · " + it), `detail` for its title;
 *  `lost`: it had played (the connection went later). */
function reason(short, detail, lost = false) { return { short, detail, lost }; }

/** The video codecs an offer (SDP) carries, by name, in its order: ["VP8", "VP9", "AV1"]
 *  (retransmission and error correction left out). */
function offeredVideoCodecs(sdp) {
  const names = [];
  let video = false;
  for (const line of sdp.split(/\r?\n/)) {
    if (line.startsWith("m=")) video = line.startsWith("m=video");
    const m = video && /^a=rtpmap:\d+ ([^/]+)\//.exec(line);
    if (m && !/^(rtx|red|ulpfec|flexfec-03)$/i.test(m[1]) && !names.includes(m[1].toUpperCase())) names.push(m[1].toUpperCase());
  }
  return names;
}

/** Why the server refused the offer (a non-201 answer to the WHEP POST to `url`, its JSON error). The
 *  server sends H.264, or VP8 to an offer without H.264: 422 unsupported_codec says the offer
 *  has neither (or VP8 could not be had): the badge names what this browser lacks. */
function refused(url, status, error, offer) {
  const said = error && error.message ? error.message.replace(/\.$/, "") : `HTTP ${status}`;
  if (error && error.code === "unsupported_codec") {
    const codecs = offeredVideoCodecs(offer), offered = codecs.join(", ").replace("H264", "H.264") || "no video";
    if (codecs.includes("H264")) return reason("no common codec", `This browser's WebRTC offers ${offered}; the server said: ${said}`);
    // Firefox has H.264 once it has downloaded Cisco's OpenH264 plugin (not without internet).
    const hint = /Firefox\//.test(navigator.userAgent) ? " (Firefox gets H.264 by downloading its OpenH264 plugin)" : "";
    return reason(codecs.includes("VP8") ? "no H.264 in this browser" : "no H.264 or VP8 in this browser",
      `This browser's WebRTC offers ${offered}${hint}; the server said: ${said}`);
  }
  return reason("WebRTC failed", `POST ${url}: ${status}: ${said}`);
}

/** Gives `pc` the STUN and TURN servers the server names for this page (webrtc.iceServers'
 *  STUN servers, webrtc.turn with a credential minted for it), before its offer gathers. None
 *  configured, or the server cannot say: the LAN's host candidates, as before. */
export async function useICEServers(pc) {
  try {
    const r = await fetch("/api/webrtc/ice-servers", { cache: "no-store" });
    const servers = r.ok ? (await r.json()).iceServers : [];
    if (servers && servers.length) pc.setConfiguration({ bundlePolicy: "max-bundle", iceServers: servers });
  } catch (_) { /* a server without the route (WebRTC off): host candidates only */ }
}

/** Opens a receive-only WHEP session: POSTs an offer to `url` and plays the answer's picture in
 *  `video` (and its sound, `audio`: the preview's; the tiles take the picture alone). Calls
 *  `onFrame()` at its first frame, and `onFail({short, detail})` once if it ends badly (why:
 *  see reason()) — never after closeWHEP(), `onSound(has)` when a sound track comes (and with
 *  false when it ends). Returns the session for closeWHEP(), or null when there is no WebRTC. */
export function openWHEP(url, video, { audio = false, onFrame = () => {}, onFail = () => {}, onSound = () => {}, stallMs = () => null } = {}) {
  if (!window.RTCPeerConnection) {
    onFail(reason("no WebRTC in this browser", "This browser has no WebRTC (RTCPeerConnection)"));
    return null;
  }
  const pc = new RTCPeerConnection({ bundlePolicy: "max-bundle" });
  const s = { pc, location: null, etag: null, video, stream: new MediaStream(), closed: false, sound: false, onSound, synced: {},
              timer: null, played: false, cut: null, trickle: { sent: null, queue: [], ended: false, busy: false, stopped: false },
              iceErrors: [] };
  const fail = (why) => {
    if (s.closed) return;
    closeWHEP(s, { keepPicture: why.lost });
    onFail(why);
  };
  const failed = (detail) => fail(reason("WebRTC failed", s.played ? detail : explained(s, detail), s.played));
  s.timer = setTimeout(() => failed("WebRTC: no frame within 5 s"), FIRST_FRAME_MS);
  (async () => {
    // As little buffering as the browser allows: the picture follows the camera (the sound
    // waits for it only as lip-sync needs).
    for (const kind of audio ? ["video", "audio"] : ["video"]) {
      const transceiver = pc.addTransceiver(kind, { direction: "recvonly" });
      if ("jitterBufferTarget" in transceiver.receiver) transceiver.receiver.jitterBufferTarget = 0;
      else transceiver.receiver.playoutDelayHint = 0;
    }
    // Both tracks in one stream: one element plays them, and the browser lines them up.
    pc.ontrack = (e) => {
      s.synced[e.track.kind] = e.streams.length ? e.streams[0].id : null;
      s.stream.addTrack(e.track);
      if (video.srcObject !== s.stream) video.srcObject = s.stream;
      if (e.track.kind === "audio") { s.sound = true; onSound(true); }
    };
    pc.onconnectionstatechange = () => {
      if (pc.connectionState === "failed" || pc.connectionState === "closed") failed(`WebRTC ${pc.connectionState}`);
      // Disconnected: the path stopped answering (consent checks). Some come back by themselves
      // (a moment's loss); one that stays so has lost its network.
      clearTimeout(s.cut);
      if (pc.connectionState === "disconnected" && s.played) s.cut = setTimeout(() => failed("WebRTC disconnected"), DISCONNECTED_MS);
    };
    // What the STUN and TURN servers answered when they would not serve (a TURN server that
    // refused the credentials: 401; one not reached: 701): the badge's title says it if the
    // session fails.
    pc.onicecandidateerror = (e) => {
      const said = `${e.url || "an ICE server"}: ${e.errorCode}${e.errorText ? ` ${e.errorText.replace(/\.$/, "")}` : ""}`;
      if (!s.iceErrors.includes(said) && s.iceErrors.length < 3) s.iceErrors.push(said);
    };
    pc.onicecandidate = (e) => {
      const t = s.trickle;
      if (e.candidate && e.candidate.candidate) {
        t.queue.push(e.candidate);
        t.ended = t.endSent = false; // gathering again (Chromium's, on a new network): a new end to come
      } else if (!e.candidate) t.ended = true;
      trickle(s);
    };
    await useICEServers(pc);
    if (s.closed) return;
    await pc.setLocalDescription(await pc.createOffer());
    if (s.closed) return;
    // Sent at once, with whatever candidates it has (often none yet): the rest are trickled.
    const offer = pc.localDescription.sdp;
    s.trickle.sent = new Set(offer.split(/\r?\n/).filter((l) => l.startsWith("a=candidate:")).map((l) => candidateKey(l.slice(2))));
    const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/sdp" }, body: offer });
    if (r.status !== 201) {
      let error = null;
      try { error = (await r.json()).error; } catch (_) { /* not JSON */ }
      fail(refused(url, r.status, error, pc.localDescription.sdp));
      return;
    }
    s.location = r.headers.get("Location");
    s.etag = r.headers.get("ETag");
    // Closed while the POST was on its way: the session it made ends now, not when the
    // server gives up on a peer that never connects (15 s).
    if (s.closed) { endAtServer(s); return; }
    await pc.setRemoteDescription({ type: "answer", sdp: await r.text() });
    trickle(s);
    const shown = () => {
      if (s.closed) return;
      clearTimeout(s.timer);
      s.played = true;
      onFrame();
      watchFrames(s, stallMs, failed);
    };
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(shown);
    else video.addEventListener("playing", shown, { once: true });
    video.play().catch(() => {});
  })().catch((e) => failed(`WebRTC: ${e.message || e}`));
  return s;
}

/** Why a session that never played failed, for the badge's title: `detail` and what ICE says —
 *  no candidate pair succeeded, or still checking when the time ran out — and what the ICE
 *  servers refused. */
function explained(s, detail) {
  const ice = s.pc.iceConnectionState;
  const why = ice === "failed" ? "no ICE candidate pair succeeded"
    : ice === "new" || ice === "checking" ? `ICE still ${ice} (timeout)` : null;
  const servers = s.iceErrors.length ? `; the ICE servers said: ${s.iceErrors.join("; ")}` : "";
  return (why ? `${detail}: ${why}` : detail) + servers;
}

/** A candidate by what makes it one (foundation, component, transport, priority, address, port):
 *  Chromium's icecandidate events add extensions (`ufrag …`) its offer's lines have not. */
function candidateKey(candidate) { return candidate.split(" ").slice(0, 6).join(" "); }

/** Ends `s` as lost when its picture stops and nothing arrives for `stallMs()` while frames are
 *  due (stallMs() null: none are, the camera stopped). Its connection may still say "connected":
 *  the browser moved to a new address and its ICE found a path from it (it gathers continually),
 *  but the server's agent, controlled, keeps sending to the old one — nothing arrives, nothing
 *  fails. A slow link is not lost: its picture may stall for seconds (a keyframe of a stream it
 *  cannot carry, until the server moves it to the sub stream), but packets keep coming. */
function watchFrames(s, stallMs, failed) {
  if (!s.video.requestVideoFrameCallback) return;
  s.lastFrame = s.lastBytesAt = performance.now();
  s.bytes = 0;
  const frame = () => { if (s.closed) return; s.lastFrame = performance.now(); s.video.requestVideoFrameCallback(frame); };
  s.video.requestVideoFrameCallback(frame);
  s.stall = setInterval(async () => {
    const after = stallMs();
    const now = performance.now();
    // While no frame is due the wait starts over: a camera starting again has its time.
    if (after === null) { s.lastFrame = s.lastBytesAt = now; return; }
    let bytes = 0;
    try {
      (await s.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp") bytes += r.bytesReceived || 0; });
    } catch (_) { return; } // closed meanwhile
    if (bytes !== s.bytes) { s.bytes = bytes; s.lastBytesAt = now; }
    if (!s.closed && now - s.lastFrame > after && now - s.lastBytesAt > after) {
      failed(`WebRTC: nothing received for ${(after / 1000).toFixed(1)} s`);
    }
  }, 250);
}

/** Sends the candidates `s`'s browser gathered since its offer (and the end of them) to its
 *  session, one PATCH at a time, each with what queued while the last was on its way. A PATCH
 *  refused (an old server: 405) ends the trickle, not the session: the server learns the
 *  browser's addresses from its checks too. */
function trickle(s) {
  const t = s.trickle;
  if (!s.location || s.closed || t.busy || t.stopped) return;
  const fresh = t.queue.filter((c) => !t.sent.has(candidateKey(c.candidate)));
  t.queue = [];
  if (!fresh.length && !(t.ended && !t.endSent)) return;
  const sdp = s.pc.localDescription ? s.pc.localDescription.sdp : "";
  const credential = (key) => (sdp.split(/\r?\n/).find((l) => l.startsWith(key)) || "");
  // RFC 8840's fragment: the ICE session's credentials, then each candidate under its mid.
  const lines = [credential("a=ice-ufrag:"), credential("a=ice-pwd:")];
  let mid = null;
  for (const c of fresh) {
    if (c.sdpMid !== mid) { mid = c.sdpMid; lines.push("m=video 9 UDP/TLS/RTP/SAVPF 0", `a=mid:${mid}`); }
    lines.push(`a=${c.candidate}`);
    t.sent.add(candidateKey(c.candidate));
  }
  if (t.ended) { lines.push("a=end-of-candidates"); t.endSent = true; }
  t.busy = true;
  const headers = { "Content-Type": "application/trickle-ice-sdpfrag" };
  if (s.etag) headers["If-Match"] = s.etag;
  fetch(s.location, { method: "PATCH", headers, body: lines.filter(Boolean).join("\r\n") + "\r\n" })
    .then((r) => { if (r.status !== 204) t.stopped = true; })
    .catch(() => { t.stopped = true; })
    .finally(() => { t.busy = false; trickle(s); });
}

/** Ends a session openWHEP() opened (and its session on the server); again does nothing.
 *  `keepPicture`: the <video> holds its last frame (a session offered again takes it over). */
export function closeWHEP(s, { keepPicture = false } = {}) {
  if (!s || s.closed) return;
  s.closed = true;
  clearTimeout(s.timer);
  clearTimeout(s.cut);
  clearInterval(s.stall);
  s.pc.close();
  if (s.video.srcObject === s.stream && !keepPicture) s.video.srcObject = null;
  if (s.sound) s.onSound(false);
  endAtServer(s);
}

function endAtServer(s) {
  // keepalive: the DELETE still goes when the page is closing.
  if (s.location) fetch(s.location, { method: "DELETE", keepalive: true }).catch(() => {});
}

let reoffers = 0, reofferTimer = null; // a lost preview's offers since its last frame; the next

/** Starts the WebRTC preview (the main camera, with its sound) in `video`: see openWHEP(). A
 *  connection lost after it played is offered again (REOFFERS times: at once, then 0.25 and 0.5 s later)
 *  before `onFail`; `reconnectedMs` and `reconnects` say how the last went (for the tests). */
export function startWebRTC(video, onFrame, onFail, onSound = () => {}, stallMs = () => null) {
  stopWebRTC();
  reoffers = 0;
  open(video, onFrame, onFail, onSound, stallMs, performance.now(), false);
}

function open(video, onFrame, onFail, onSound, stallMs, started, again) {
  session = openWHEP("/api/whep", video, {
    audio: true, onSound, stallMs,
    onFrame: () => {
      if (again) { reconnectedMs = performance.now() - started; reconnects++; } else firstFrameMs = performance.now() - started;
      reoffers = 0;
      onFrame();
    },
    onFail: (why) => {
      session = null;
      // A session offered again may fail before its first frame (the new network not up yet).
      if (!(why.lost || again) || reoffers >= REOFFERS) {
        if (why.lost || again) video.srcObject = null; // the picture held for a session that never came
        onFail(why);
        return;
      }
      reoffers++;
      console.warn(`WebRTC preview: ${why.detail}; offering again (${reoffers} of ${REOFFERS})`);
      const lostAt = again ? started : performance.now();
      reofferTimer = setTimeout(() => open(video, onFrame, onFail, onSound, stallMs, lostAt, true), 250 * (reoffers - 1));
    },
  });
}

let reconnectedMs = null, reconnects = 0;

/** The preview's connection and ICE states now (null without a session), for the tests. */
export function webrtcConnection() { return session ? { connection: session.pc.connectionState, ice: session.pc.iceConnectionState } : null; }

/** From the last lost connection to the first frame of the session offered again, in ms (null
 *  before one), and how many times the preview came back so (for the tests). */
export function webrtcReconnected() { return { ms: reconnectedMs, count: reconnects }; }

/** Ends the WebRTC preview (and its session on the server). */
export function stopWebRTC() {
  clearTimeout(reofferTimer);
  const s = session;
  session = null;
  closeWHEP(s);
}

/** From the offer's making to the first frame shown, in ms, of the last start (null before one). */
export function webrtcFirstFrameMs() { return firstFrameMs; }

/** The codec the WebRTC picture arrives in ("video/H264", "video/VP8"), for the tests; null before. */
export async function videoCodec() {
  if (!session) return null;
  const stats = await session.pc.getStats();
  let codec = null;
  stats.forEach((r) => {
    const c = r.type === "inbound-rtp" && r.kind === "video" && r.codecId && stats.get(r.codecId);
    if (c) codec = c.mimeType;
  });
  return codec;
}

/** The RTP header extensions the picture's receiver negotiated (their URIs), for the tests:
 *  the server's answer asks for libwebrtc's playout delay where the browser offers it. */
export function videoHeaderExtensions() {
  if (!session) return [];
  const receiver = session.pc.getReceivers().find((r) => r.track && r.track.kind === "video");
  return receiver ? receiver.getParameters().headerExtensions.map((e) => e.uri) : [];
}

/** The decoder's figures, for the tests: frames decoded so far by the preview's session, or `s`
 *  (a tile's). */
export async function framesDecoded(s = session) {
  if (!s) return 0;
  let n = 0;
  (await s.pc.getStats()).forEach((r) => { if (r.type === "inbound-rtp" && r.kind === "video") n = r.framesDecoded || 0; });
  return n;
}

/** The receiver's figures of the sound, for the test and bench/sound.py: packets, the codec,
 *  whether the answer put both tracks in one stream (what the browser lines up: its lip-sync
 *  group), how far it plays the sound after the picture (its estimated playout times, ms; null
 *  where the browser gives none), and each track's age: the clock against the capture time of
 *  what it plays now (the playout time is in the sender's clock, through its sender reports:
 *  the same clock when both run on one machine), and what Chromium itself holds it for: its
 *  jitter buffer's and its audio device's delays, summed over their samples (bench/sound.py
 *  takes the means). A muted track is not played out. */
export async function soundStats() {
  if (!session) return null;
  const ids = session.synced;
  const out = { packets: 0, codec: null, samples: 0, skewMs: null, oneStream: !!ids.audio && ids.audio === ids.video,
                soundAgeMs: null, pictureAgeMs: null };
  let audioAt = null, videoAt = null;
  const stats = await session.pc.getStats();
  const now = Date.now() + 2208988800000; // the stats' NTP milliseconds (from 1900)
  stats.forEach((r) => {
    if (r.type === "media-playout") { // the audio device's side: seconds summed over its samples
      out.playoutDelay = r.totalPlayoutDelay ?? null;
      out.playoutSamples = r.totalSamplesCount ?? null;
    }
    if (r.type !== "inbound-rtp") return;
    if (r.kind === "audio") {
      out.packets = r.packetsReceived || 0;
      out.samples = r.totalSamplesReceived || 0;
      out.jitterBufferDelay = r.jitterBufferDelay ?? null; // seconds, summed over the samples emitted
      out.jitterBufferEmitted = r.jitterBufferEmittedCount ?? null;
      audioAt = r.estimatedPlayoutTimestamp ?? null;
      const codec = r.codecId && stats.get(r.codecId);
      out.codec = codec ? codec.mimeType : null;
    } else if (r.kind === "video") {
      videoAt = r.estimatedPlayoutTimestamp ?? null;
    }
  });
  if (audioAt !== null && videoAt !== null) out.skewMs = videoAt - audioAt;
  if (audioAt !== null) out.soundAgeMs = now - audioAt;
  if (videoAt !== null) out.pictureAgeMs = now - videoAt;
  return out;
}

/** Resolves once ICE gathering completes — for an offer that cannot trickle (push-to-talk's
 *  WHIP: its session takes no PATCH). Without STUN or TURN servers, 40 ms after the first
 *  candidate (host candidates come together; Chromium calls gathering complete only some 100 ms
 *  later, and the server learns any candidate the offer lacks from the checks) or after 1 s; with
 *  them, when gathering completes or after 3 s (the server's own bound): a relayed candidate
 *  comes a round trip to the TURN server later, and without it a talker behind a symmetric NAT
 *  is not heard. */
export function gathered(pc) {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  const servers = (pc.getConfiguration().iceServers || []).length > 0;
  return new Promise((resolve) => {
    let soon = null;
    pc.addEventListener("icegatheringstatechange", () => { if (pc.iceGatheringState === "complete") resolve(); });
    if (!servers) pc.addEventListener("icecandidate", (e) => { if (e.candidate && !soon) soon = setTimeout(resolve, 40); });
    setTimeout(resolve, servers ? 3000 : 1000);
  });
}
