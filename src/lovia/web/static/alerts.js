// What the page does when a run it drives finishes (issue 31, Settings → General): a short
// tone, if the user turned the sound on, and a desktop notification while the tab is hidden,
// if the user turned notifications on and the browser granted them. The tone is made with
// WebAudio: no sound file is fetched. Nothing here asks the browser for anything by itself:
// the permission request comes from the user's click in the General pane.

import { t } from "./i18n.js";
import { notifyWanted, soundWanted } from "./prefs.js";

let audio = null;

export function notificationsSupported() {
  return typeof window.Notification === "function";
}

export function notificationsOn() {
  return notifyWanted() && notificationsSupported() && window.Notification.permission === "granted";
}

// Two soft rising notes, a fifth of a second in all; silent where audio is unavailable.
export function playTone() {
  try {
    const Ctx = window.AudioContext || window.webkitAudioContext;
    if (!Ctx) return;
    audio = audio || new Ctx();
    if (audio.state === "suspended") audio.resume().catch(() => {});
    const now = audio.currentTime;
    for (const [freq, at] of [[660, 0], [990, 0.1]]) {
      const osc = audio.createOscillator();
      const gain = audio.createGain();
      osc.type = "sine";
      osc.frequency.value = freq;
      gain.gain.setValueAtTime(0.0001, now + at);
      gain.gain.exponentialRampToValueAtTime(0.1, now + at + 0.02);
      gain.gain.exponentialRampToValueAtTime(0.0001, now + at + 0.16);
      osc.connect(gain).connect(audio.destination);
      osc.start(now + at);
      osc.stop(now + at + 0.18);
    }
  } catch (_) { /* blocked or unavailable: stay silent */ }
}

// A run-end event (extensions.js); title(): the open chat's title. A run the user stopped or
// left ends without a sound or a notification: the user knows already.
export function runEnded(event, title) {
  if (event.status !== "done" && event.status !== "error") return;
  if (soundWanted()) playTone();
  if (!document.hidden || !notificationsOn()) return;
  const key = event.status === "done" ? "alerts.finished" : "alerts.failed";
  try {
    new window.Notification(document.title, { body: t(key, { title: title() || t("alerts.untitled") }) });
  } catch (_) { /* some platforms allow notifications only from a service worker */ }
}
