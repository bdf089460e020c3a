// The page's chrome: its title or logo, the blank chat's welcome, and the theme and language
// toggles (and the same two choices for Settings → General). A template that fills the sidebar_header block may leave no #page-title.

import { applyI18n, currentLang, languages, setLang, setupI18n, t } from "./i18n.js";
import { el } from "./render.js";
import { setThemePref, setupTheme, toggleTheme } from "./theme.js";
import { drawWelcome } from "./welcome.js";

// Returns { language(pick), theme(pick) }: what the General pane calls on a change.
export function setupChrome(ui, config, { emit, languageChanged }) {
  setupTheme();
  setupI18n(config);
  applyI18n();
  ui.langToggle.textContent = t("lang.switch");
  if (ui.pageTitle && config.title) ui.pageTitle.textContent = config.title;
  if (ui.pageTitle && config.logo) {
    const logo = el("img", "logo");
    logo.src = config.logo;
    logo.alt = config.title || "lovia";
    logo.dataset.testid = "logo";
    ui.pageTitle.replaceChildren(logo);
  }
  const pick = (text) => { ui.input.value = text; ui.input.focus(); };
  const welcome = () => drawWelcome({ box: ui.welcome, title: ui.welcomeTitle,
    description: ui.welcomeDescription, examples: ui.welcomeExamples }, config, pick);
  welcome();
  const themed = () => emit("theme", { theme: document.documentElement.dataset.theme });
  const language = (pick) => {
    setLang(pick);
    applyI18n();
    ui.langToggle.textContent = t("lang.switch");
    welcome();
    languageChanged();
  };
  ui.themeToggle.addEventListener("click", () => { toggleTheme(); themed(); });
  ui.langToggle.addEventListener("click", () => {
    const all = languages();
    language(all[(all.indexOf(currentLang()) + 1) % all.length]);
  });
  return { language, theme: (pick) => { setThemePref(pick); themed(); } };
}
