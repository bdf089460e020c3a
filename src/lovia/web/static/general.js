// Settings → General (issue 31): this browser's own preferences, offered with or without a
// config.json on the server: language, theme, the message text size, what Enter does in the
// composer, a desktop notification when a run finishes in a hidden tab, and a tone when a run
// finishes. Each applies at once and is kept in localStorage (prefs.js, theme.js, i18n.js).

import { notificationsOn, notificationsSupported, playTone } from "./alerts.js";
import { choice, field } from "./dialog.js";
import { applyI18n, currentLang, langPref, languages, t } from "./i18n.js";
import { ui } from "./page.js";
import { el } from "./render.js";
import {
  enterSends, labelSend, setEnterSends, setNotifyWanted, setSoundWanted, setTextSize, soundWanted, textSize,
} from "./prefs.js";
import { themePref } from "./theme.js";

const NAMES = { en: "English", zh: "中文" }; // each language in its own words

function checkbox(label, checked, testid) {
  const box = el("input");
  box.type = "checkbox";
  box.checked = checked;
  box.dataset.testid = testid;
  const row = el("label", "panel-check");
  row.append(box, el("span", null, label));
  return [row, box];
}

// chrome: { language(pick), theme(pick) } from chrome.js; say(text, kind): the dialog's
// status line; redraw(): draw the dialog again (after the language changed).
export function generalPane(chrome, { say, redraw }) {
  const lang = choice([["auto", t("general.langAuto")], ...languages().map((l) => [l, NAMES[l] || l])],
    langPref(), "pref-language");
  lang.addEventListener("change", () => {
    const before = currentLang();
    chrome.language(lang.value);
    if (currentLang() !== before) redraw();
  });
  const theme = choice([["system", t("general.themeSystem")], ["light", t("general.themeLight")],
    ["dark", t("general.themeDark")]], themePref(), "pref-theme");
  theme.addEventListener("change", () => chrome.theme(theme.value));
  const size = choice([["sm", t("general.textSmall")], ["md", t("general.textDefault")],
    ["lg", t("general.textLarge")]], textSize(), "pref-text-size");
  size.addEventListener("change", () => setTextSize(size.value));
  const enter = choice([["send", t("general.enterSends")], ["newline", t("general.enterNewline")]],
    enterSends() ? "send" : "newline", "pref-enter");
  enter.addEventListener("change", () => {
    setEnterSends(enter.value === "send");
    labelSend(ui.send);
    applyI18n();
  });
  const box = el("div", "panel-form");
  box.dataset.testid = "settings-general";
  box.append(field(t("general.language"), lang), field(t("general.theme"), theme),
    field(t("general.textSize"), size), field(t("general.enter"), enter));
  if (notificationsSupported()) {
    const [row, notify] = checkbox(t("general.notify"), notificationsOn(), "pref-notify");
    notify.addEventListener("change", async () => {
      if (!notify.checked) { setNotifyWanted(false); return; }
      let answer = "denied";
      try { answer = await window.Notification.requestPermission(); } catch (_) { /* refused */ }
      if (answer === "granted") { setNotifyWanted(true); return; }
      notify.checked = false;
      setNotifyWanted(false);
      say(t("general.notifyDenied"), "error");
    });
    box.append(row);
  }
  const [row, sound] = checkbox(t("general.sound"), soundWanted(), "pref-sound");
  sound.addEventListener("change", () => {
    setSoundWanted(sound.checked);
    if (sound.checked) playTone(); // a preview, so the user knows what it sounds like
  });
  box.append(row);
  return [box];
}
