// The footer under an answer that ended a run: when the run ended, how long it took and the
// tokens it used, in the page's language. Drawn live from the stream's timing and done
// events, and from a chat's stored messages (timestamp, duration) and its run records'
// usage (by run id) when the chat is drawn again: both look the same. Only text: numbers
// from the server are formatted here and set with textContent, never read as HTML.

import { currentLang, t } from "./i18n.js";
import { el } from "./render.js";

// The browser's own locale when it speaks the page's language (its region's clock), else
// the page's language.
function locale() {
  const lang = currentLang();
  const browser = navigator.language || "";
  return browser.toLowerCase().split("-")[0] === lang ? browser : lang;
}

const count = (n) => new Intl.NumberFormat(locale()).format(Math.max(0, Math.round(Number(n) || 0)));
const finite = (n) => typeof n === "number" && Number.isFinite(n);

// Under ten seconds to a tenth of a second (a scripted or cached run is quick), else whole.
export function formatDuration(seconds) {
  const s = Math.max(0, seconds);
  if (s < 0.1) return t("footer.under", { s: new Intl.NumberFormat(locale()).format(0.1) });
  if (s < 10) {
    const tenths = new Intl.NumberFormat(locale(), { minimumFractionDigits: 1, maximumFractionDigits: 1 });
    return t("footer.seconds", { s: tenths.format(s) });
  }
  const whole = Math.round(s);
  if (whole < 60) return t("footer.seconds", { s: count(whole) });
  if (whole < 3600) return t("footer.minutes", { m: count(Math.floor(whole / 60)), s: count(whole % 60) });
  return t("footer.hours", { h: count(Math.floor(whole / 3600)), m: count(Math.floor((whole % 3600) / 60)) });
}

// The hour and minute today; with the day on another day, and the year in another year.
export function formatTime(epochSeconds) {
  const when = new Date(epochSeconds * 1000);
  const now = new Date();
  const options = { hour: "2-digit", minute: "2-digit" };
  if (when.toDateString() !== now.toDateString()) Object.assign(options, { month: "short", day: "numeric" });
  if (when.getFullYear() !== now.getFullYear()) options.year = "numeric";
  return new Intl.DateTimeFormat(locale(), options).format(when);
}

function part(footer, testid) {
  let node = footer.querySelector(`[data-testid=${testid}]`);
  if (!node) {
    node = el("span", testid);
    node.dataset.testid = testid;
    // always in the order time, duration, tokens, whichever comes first
    const order = ["run-time", "run-duration", "run-tokens"];
    const after = [...footer.children].find((c) => order.indexOf(c.dataset.testid) > order.indexOf(testid));
    footer.insertBefore(node, after || null);
  }
  return node;
}

// Stamp what is known of the run on answer (an AnswerView): { at, duration, usage }, each
// optional; what is already shown stays unless given again.
export function stampRun(answer, { at, duration, usage } = {}) {
  if (!answer) return;
  let footer = answer.runFooter;
  if (!footer) {
    footer = el("span", "run-footer");
    footer.dataset.testid = "run-footer";
    footer.dataset.part = "run-footer";
    answer.runFooter = footer;
    answer.actions.prepend(footer);
  }
  if (finite(at)) {
    const node = part(footer, "run-time");
    node.textContent = formatTime(at);
    node.title = new Intl.DateTimeFormat(locale(), { dateStyle: "medium", timeStyle: "medium" })
      .format(new Date(at * 1000));
  }
  if (finite(duration)) {
    const node = part(footer, "run-duration");
    node.textContent = formatDuration(duration);
    node.title = t("footer.took", { d: node.textContent });
  }
  const total = usage && (finite(usage.total_tokens) ? usage.total_tokens
    : (Number(usage.input_tokens) || 0) + (Number(usage.output_tokens) || 0));
  // no tokens means the provider reported none, not a free run
  if (total > 0) {
    const node = part(footer, "run-tokens");
    node.textContent = t("footer.tokens", { n: count(total) });
    node.title = t("footer.split", { input: count(usage.input_tokens), output: count(usage.output_tokens) });
  }
}

// A drawn chat's footers: each exchange whose answer ended a run (answer.runEnd, from its
// stored messages) gets its time and duration now, and its tokens once records (a promise
// of the chat's run records, or of null) come, unless current() says the chat is gone.
export async function stampChat(exchanges, records, current) {
  const ended = exchanges.filter((x) => x.answer && x.answer.runEnd);
  for (const x of ended) stampRun(x.answer, x.answer.runEnd);
  if (!ended.length) return;
  const runs = await records;
  if (!Array.isArray(runs) || !current()) return;
  const usage = new Map(runs.filter((r) => r && r.usage).map((r) => [r.run_id, r.usage]));
  for (const x of ended) stampRun(x.answer, { usage: usage.get(x.answer.runEnd.runId) });
}
