// The page's options from the server (ChatUI): a JSON data block in the page, never run.

let config = null;

export function pageConfig() {
  if (config) return config;
  config = {};
  const block = document.getElementById("lovia-config");
  if (block) {
    try { config = JSON.parse(block.textContent) || {}; } catch (_) { config = {}; }
  }
  return config;
}
