// Charts from tools (show_chart, ui_result("chart", option)): an Apache ECharts option,
// drawn by the vendored ECharts, loaded the first time a chart is shown. The option is
// data from the model, never code: it is copied as JSON (no functions can come through),
// the tooltip is drawn as canvas text instead of HTML, and the parts that would turn
// strings into markup or fetch things (the data view, map and image sources) are dropped;
// links the chart opens on a click are web pages only, opened in a new tab.

let library = null;
const loadLibrary = () => (library ??= import("./vendor/echarts.esm.min.js"));

const DROPPED_KEYS = new Set(["dataView", "geo", "bmap", "graphic", "extraCssText", "appendToBody", "appendTo"]);

const LINK_KEYS = [["link", "target"], ["sublink", "subtarget"]];

function clean(value, depth = 0) {
  if (depth > 40) return null;
  if (Array.isArray(value)) return value.map((v) => clean(v, depth + 1));
  if (value && typeof value === "object") {
    const out = {};
    for (const [key, v] of Object.entries(value)) {
      if (DROPPED_KEYS.has(key) || key === "__proto__") continue;
      if (key === "image" && typeof v === "string" && !v.startsWith("data:image/")) continue;
      out[key] = clean(v, depth + 1);
    }
    // a title's link or sublink and a treemap or sunburst node's link open where the option
    // says when clicked: only a web page, and only in a new tab without this page as opener
    // (a javascript: link would run in the page, a "self" target would take the page away)
    for (const [key, where] of LINK_KEYS) {
      if (typeof out[key] !== "string") continue;
      const link = out[key].trim();
      if (/^https?:\/\//i.test(link)) { out[key] = link; out[where] = "blank"; }
      else delete out[key];
    }
    return out;
  }
  return typeof value === "function" ? null : value;
}

const asList = (v) => (Array.isArray(v) ? v : v && typeof v === "object" ? [v] : []);

// The option as the page draws it: a JSON copy, cleaned, tooltips as text, described for
// screen readers (ECharts' aria: a label naming the chart, its series and values).
export function safeOption(option) {
  let copy;
  try { copy = JSON.parse(JSON.stringify(option)); } catch (_) { return null; }
  if (!copy || typeof copy !== "object" || Array.isArray(copy)) return null;
  copy = clean(copy);
  const tooltips = asList(copy.tooltip);
  copy.tooltip = (tooltips.length ? tooltips : [{ trigger: "item" }]).map((tip) => ({
    ...tip, renderMode: "richText",
  }));
  for (const series of asList(copy.series)) {
    if (series && series.tooltip) series.tooltip = { ...series.tooltip, renderMode: "richText" };
  }
  copy.aria = { enabled: true, decal: { show: false } };
  copy.animation = false;
  return copy;
}

// A box the chart is drawn into once the library has loaded; "data-drawn" says when.
export function chartView(option, dark) {
  const box = document.createElement("div");
  box.className = "chart-box";
  const safe = safeOption(option);
  if (!safe) { box.dataset.drawn = "error"; return box; }
  loadLibrary().then((echarts) => {
    requestAnimationFrame(() => {
      try {
        const chart = echarts.init(box, dark ? "dark" : null, { renderer: "canvas" });
        chart.setOption(safe);
        new ResizeObserver(() => chart.resize()).observe(box);
        box.dataset.drawn = "true";
      } catch (err) {
        box.dataset.drawn = "error";
        box.textContent = String(err && err.message ? err.message : err);
      }
    });
  }, () => { box.dataset.drawn = "error"; });
  return box;
}
