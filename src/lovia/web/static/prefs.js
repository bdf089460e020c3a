// The user's own preferences for this browser (issue 31: Settings → General), kept in
// localStorage under the keys 0.9.119's page used, so its users' choices carry over:
// the message text size, what Enter does in the composer, desktop notifications and the
// sound when a run finishes. Theme and language keep their own modules (theme.js, i18n.js).

const KEYS = { textSize: "lovia-text-size", enter: "lovia-enter-send", notify: "lovia-notify", sound: "lovia-sound" };
const SCALES = { sm: "0.92", md: "1", lg: "1.14" };

function read(key) {
  try { return localStorage.getItem(key); } catch (_) { return null; }
}

function write(key, value) {
  try { localStorage.setItem(key, value); } catch (_) { /* private mode: for this page only */ }
}

export function textSize() {
  const size = read(KEYS.textSize);
  return size === "sm" || size === "lg" ? size : "md";
}

// The text size scales the transcript and the composer through --chat-font-scale (style.css).
export function applyTextSize(size = textSize()) {
  const root = document.documentElement;
  if (size in SCALES && size !== "md") root.style.setProperty("--chat-font-scale", SCALES[size]);
  else root.style.removeProperty("--chat-font-scale");
  root.dataset.textSize = size in SCALES ? size : "md";
}

export function setTextSize(size) {
  write(KEYS.textSize, size);
  applyTextSize(size);
}

// True (the default): Enter sends and Shift+Enter starts a line. False: Enter starts a line
// and Ctrl/Cmd+Enter sends.
export function enterSends() {
  return read(KEYS.enter) !== "0";
}

export function setEnterSends(on) {
  write(KEYS.enter, on ? "1" : "0");
}

// The Send button's tooltip names the key that sends (i18n.js's applyI18n draws it).
export function labelSend(button) {
  button.dataset.i18nTitle = enterSends() ? "composer.sendTip" : "composer.sendTipMod";
}

// Whether this Enter keydown sends the message, under the user's Enter-key setting.
export function sendsOnEnter(ev) {
  const mod = ev.ctrlKey || ev.metaKey;
  return enterSends() ? !ev.shiftKey && !mod : mod;
}

export function notifyWanted() {
  return read(KEYS.notify) === "1";
}

export function setNotifyWanted(on) {
  write(KEYS.notify, on ? "1" : "0");
}

export function soundWanted() {
  return read(KEYS.sound) === "1";
}

export function setSoundWanted(on) {
  write(KEYS.sound, on ? "1" : "0");
}
