// Light or dark: the user's pick (kept in localStorage), else what the system prefers.
// The theme is html[data-theme]; style.css holds each theme's colours. A pick saved by
// 0.9.119's page ("lovia-theme": system, light or dark) is read when this page has none.

const STORE_KEY = "lovia.theme";
const OLD_KEY = "lovia-theme";

function stored() {
  try { return localStorage.getItem(STORE_KEY) ?? localStorage.getItem(OLD_KEY); } catch (_) { return null; }
}

export function currentTheme() {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === "dark" ? "dark" : "light";
}

// "light", "dark" or "system" (follow the system's preference).
export function themePref() {
  const pick = stored();
  return pick === "dark" || pick === "light" ? pick : "system";
}

export function setupTheme() {
  const pick = themePref();
  const system = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  applyTheme(pick !== "system" ? pick : system ? "dark" : "light");
}

export function setThemePref(pick) {
  try { localStorage.setItem(STORE_KEY, pick === "dark" || pick === "light" ? pick : "system"); } catch (_) { /* private mode */ }
  setupTheme();
}

export function toggleTheme() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  setThemePref(next);
  return next;
}
