// UI components from tools (ui_result): a tool result {"lovia_ui": {kind, props | from_args}}
// is drawn under its tool card. Tables (show_table) are drawn here, sortable and filterable;
// charts (charts.js) and HTML pages (frames.js) have their own modules; other kinds say
// what they are. Props are untrusted: every cell is text.

import { chartView } from "./charts.js";
import { renderContext } from "./extensions.js";
import { registerBuiltin, rendererFor } from "./registry.js";
import { htmlFrame } from "./frames.js";
import { t } from "./i18n.js";
import { el } from "./render.js";

export function envelopeOf(output) {
  if (typeof output !== "string" || !output.includes("lovia_ui")) return null;
  try {
    const value = JSON.parse(output);
    const env = value && value.lovia_ui;
    return env && typeof env === "object" && typeof env.kind === "string" ? env : null;
  } catch (_) { return null; }
}

function propsOf(env, call) {
  if (env.props !== undefined) return env.props;
  if (!env.from_args) return null;
  let args = {};
  try { args = JSON.parse((call && call.arguments) || "{}"); } catch (_) { return null; }
  return env.from_args === true ? args : args[env.from_args];
}

const cellText = (v) => (v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v));

function compare(a, b) {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return cellText(a).localeCompare(cellText(b), undefined, { numeric: true });
}

function tableView(props) {
  const columns = Array.isArray(props.columns) ? props.columns.map(cellText) : [];
  const rows = Array.isArray(props.rows) ? props.rows.filter(Array.isArray) : [];
  const box = el("div", "component table-component");
  if (props.title) box.append(el("div", "component-title", cellText(props.title)));
  const filter = el("input", "table-filter");
  filter.type = "search";
  filter.placeholder = t("table.filter");
  filter.setAttribute("aria-label", t("table.filter"));
  filter.dataset.testid = "table-filter";
  const table = el("table", "data-table");
  const head = el("tr");
  const body = el("tbody");
  let sortBy = -1;
  let descending = false;
  const draw = () => {
    const needle = filter.value.trim().toLowerCase();
    let shown = rows.filter((r) => !needle || r.some((v) => cellText(v).toLowerCase().includes(needle)));
    if (sortBy >= 0) {
      shown = [...shown].sort((a, b) => compare(a[sortBy], b[sortBy]) * (descending ? -1 : 1));
    }
    body.replaceChildren(...shown.map((r) => {
      const tr = el("tr");
      tr.dataset.testid = "table-row";
      for (let i = 0; i < columns.length; i += 1) {
        const td = el("td", typeof r[i] === "number" ? "num" : null, cellText(r[i]));
        tr.append(td);
      }
      return tr;
    }));
  };
  columns.forEach((name, i) => {
    const th = el("th", null, name);
    th.dataset.testid = "table-heading";
    th.addEventListener("click", () => {
      descending = sortBy === i ? !descending : false;
      sortBy = i;
      for (const x of head.children) x.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      draw();
    });
    head.append(th);
  });
  const thead = el("thead");
  thead.append(head);
  table.append(thead, body);
  filter.addEventListener("input", draw);
  draw();
  const scroll = el("div", "table-scroll");
  scroll.append(table);
  box.append(filter, scroll);
  return box;
}

const isDark = () => document.documentElement.dataset.theme === "dark";

function titled(title, inner) {
  const box = el("div", "component");
  if (typeof title === "string" && title) box.append(el("div", "component-title", title));
  box.append(inner);
  return box;
}

// The built-in kinds, as renderers (window.lovia.getRenderer("chart") returns one; an
// extension may register its own under the same kind).
const BUILTIN = {
  table: (props) => tableView(props),
  chart: (props) => titled(props.title, chartView(props, isDark())),
  html: (props) => (typeof props.html === "string"
    ? titled(props.title, htmlFrame(props.html, typeof props.title === "string" ? props.title : ""))
    : null),
};
for (const [kind, view] of Object.entries(BUILTIN)) {
  registerBuiltin(kind, {
    render(target, props) {
      const node = props && typeof props === "object" ? view(props) : null;
      if (!node) throw new Error(`the ${kind}'s props are not usable`);
      target.append(node);
    },
  });
}

const failed = (node, err) => {
  console.error("lovia: a component renderer failed", err);
  node.replaceChildren(el("div", "note error", t("component.failed")));
};

// The component for a tool's result, or null when the result is not one. ctx: the chat's
// id, whether the result just arrived (live), and send(text) for a click in the component.
export function componentFor(output, call, extra = {}) {
  const env = envelopeOf(output);
  if (!env) return null;
  const props = propsOf(env, call);
  const node = el("div", "component-box");
  const renderer = rendererFor(env.kind);
  if (!renderer) node.append(el("div", "component note muted", t("component.unsupported", { kind: env.kind })));
  else {
    const ctx = Object.freeze(renderContext({ callId: call ? call.call_id || call.id : null, live: true, ...extra }));
    try {
      const done = renderer.render(node, props, ctx);
      if (done && typeof done.then === "function") done.catch((err) => failed(node, err));
    } catch (err) { failed(node, err); }
  }
  node.dataset.part = "component";
  node.dataset.kind = env.kind;
  node.dataset.testid = "component";
  return node;
}
