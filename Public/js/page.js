// The page's small shared helpers: element lookup, the toast (errors and news shown to the
// person), throttling for sliders and a mm:ss clock. Here because every section uses them
// and they hold no state of the page's own.

export const $ = (id) => document.getElementById(id);

let toastTimer = null; // hides the toast after a while
/** Shows a message for a while: an error, or with `kind` "info" news that is not one. */
export function toast(message, kind) {
  const t = $("toast");
  t.textContent = message;
  t.classList.toggle("info", kind === "info");
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { t.hidden = true; }, 6000);
}

/** Calls `fn` at most every `ms`, always with the latest arguments, and once at the end. */
export function throttled(fn, ms = 90) {
  let last = 0, timer = null, args = null;
  return (...a) => {
    args = a;
    const wait = ms - (Date.now() - last);
    if (wait <= 0) { last = Date.now(); fn(...args); return; }
    if (!timer) timer = setTimeout(() => { timer = null; last = Date.now(); fn(...args); }, wait);
  };
}

/** Seconds as mm:ss (h:mm:ss from an hour): the record button's time and a movie's length. */
export function clock(seconds) {
  const t = Math.max(0, Math.floor(Number(seconds) || 0));
  const two = (n) => String(n).padStart(2, "0");
  const h = Math.floor(t / 3600), m = Math.floor(t / 60) % 60, s = t % 60;
  return h ? `${h}:${two(m)}:${two(s)}` : `${two(m)}:${two(s)}`;
}

/** The camera's name as a span of `className` for a list entry that says which camera it is
 *  about; null while only one camera exists (or none is named). */
export function cameraTag(cameras, camera, className) {
  if (cameras.length <= 1 || !camera) return null;
  const cam = cameras.find((c) => c.id === camera);
  const where = document.createElement("span");
  where.className = className;
  where.textContent = cam ? cam.name : camera;
  return where;
}
