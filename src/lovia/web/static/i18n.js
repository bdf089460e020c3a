// The page's wording in English and Chinese, the language in use, and how it is chosen:
// the user's pick (kept in localStorage), else ChatUI's default_lang, else the browser's.
// ChatUI(messages=...) overrides or adds strings per language; a missing one falls back to
// English. Static elements name their strings with data-i18n (text), data-i18n-title,
// data-i18n-aria and data-i18n-placeholder. The tables are strings-en.js and strings-zh.js.

import { pageConfig } from "./config.js";
import { EN } from "./strings-en.js";
import { ZH } from "./strings-zh.js";

const MESSAGES = { en: EN, zh: ZH };

const STORE_KEY = "lovia.lang";
const OLD_KEY = "lovia-lang"; // 0.9.119's page's: "auto" or a language
let overrides = {};
let fallback = "en";
let lang = "en";

function stored() {
  try { return localStorage.getItem(STORE_KEY) ?? localStorage.getItem(OLD_KEY); } catch (_) { return null; }
}

export function languages() {
  return [...new Set([...Object.keys(MESSAGES), ...Object.keys(overrides)])];
}

// Read ChatUI's messages and default_lang, then settle the language.
export function setupI18n(config = {}) {
  overrides = config.messages && typeof config.messages === "object" ? config.messages : {};
  const known = languages();
  const browser = (navigator.language || "en").toLowerCase().split("-")[0];
  fallback = known.includes(config.default_lang) ? config.default_lang
    : known.includes(browser) ? browser : "en";
  const pick = stored();
  lang = known.includes(pick) ? pick : fallback;
  document.documentElement.lang = lang;
}

export function currentLang() {
  return lang;
}

// The user's pick: a language, or "auto" (ChatUI's default_lang, else the browser's).
export function langPref() {
  const pick = stored();
  return languages().includes(pick) ? pick : "auto";
}

export function setLang(next) {
  if (next !== "auto" && !languages().includes(next)) return;
  lang = next === "auto" ? fallback : next;
  try { localStorage.setItem(STORE_KEY, next); } catch (_) { /* private mode */ }
  document.documentElement.lang = lang;
}

// The string for key in the current language, with {name} placeholders filled.
export function t(key, vars = {}) {
  const own = overrides[lang] || {};
  const text = own[key] ?? (MESSAGES[lang] || {})[key] ?? (overrides.en || {})[key]
    ?? MESSAGES.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

export function has(key) {
  return languages().some((l) => key in (MESSAGES[l] || {}) || key in (overrides[l] || {}));
}

// Label the page's static elements in the current language.
export function applyI18n(root = document) {
  const attrs = [["data-i18n-title", "title"], ["data-i18n-aria", "aria-label"],
    ["data-i18n-placeholder", "placeholder"]];
  for (const node of root.querySelectorAll("[data-i18n]")) {
    const key = node.getAttribute("data-i18n");
    if (has(key)) node.textContent = t(key);
  }
  for (const [attr, target] of attrs) {
    for (const node of root.querySelectorAll(`[${attr}]`)) {
      const key = node.getAttribute(attr);
      if (has(key)) node.setAttribute(target, t(key));
    }
  }
}

// Settled as soon as this module loads, so extension scripts (which run before the page
// starts) read ChatUI's wording through lovia.t too.
setupI18n(pageConfig());
