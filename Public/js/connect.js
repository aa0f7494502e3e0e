// Where other programs reach the camera shown: its RTSP URLs (the main H.264 stream, the sub
// stream and the preview's RTP/JPEG) at this page's host, and the ONVIF device's address an
// NVR or Home Assistant adds, with whether WS-Discovery announces it (GET /api/cameras'
// services). Hidden until the listing has said.

import { store } from "./state.js";

const $ = (id) => document.getElementById(id);

export function renderConnect() {
  const s = store.services;
  $("connect-group").hidden = !s;
  if (!s) return;
  const camera = store.state && store.state.camera ? store.state.camera.id : "main";
  const host = location.hostname.includes(":") ? `[${location.hostname}]` : location.hostname;
  $("rtsp-row").hidden = !s.rtsp;
  if (s.rtsp) $("rtsp-url").textContent = `rtsp://${host}:${s.rtsp}/${camera}`;
  $("onvif-url").textContent = s.onvif.enabled ? s.onvif.deviceService : "off";
  $("onvif-discovery").textContent = s.onvif.enabled ? `Discovery ${s.onvif.discovery}` : "";
}
