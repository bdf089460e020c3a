// Light or dark: the user's pick (kept in localStorage), else what the system prefers.
// The theme is html[data-theme]; style.css holds each theme's colours.

const STORE_KEY = "lovia.theme";

function stored() {
  try { return localStorage.getItem(STORE_KEY); } catch (_) { return null; }
}

export function currentTheme() {
  return document.documentElement.dataset.theme === "dark" ? "dark" : "light";
}

export function applyTheme(theme) {
  document.documentElement.dataset.theme = theme === "dark" ? "dark" : "light";
}

export function setupTheme() {
  const pick = stored();
  const system = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
  applyTheme(pick === "dark" || pick === "light" ? pick : system ? "dark" : "light");
}

export function toggleTheme() {
  const next = currentTheme() === "dark" ? "light" : "dark";
  applyTheme(next);
  try { localStorage.setItem(STORE_KEY, next); } catch (_) { /* private mode */ }
  return next;
}
