// Folding the sidebar away on a wide screen (issue 31, as 0.9.119's): a button in the
// sidebar hides it, one in the top bar brings it back, and the choice outlives a reload
// (localStorage, under 0.9.119's key). A phone keeps its own drawer (#menu) instead.

const KEY = "lovia-sidebar-collapsed";

function stored() {
  try { return localStorage.getItem(KEY) === "1"; } catch (_) { return false; }
}

function setCollapsed(collapsed) {
  document.body.classList.toggle("sidebar-collapsed", collapsed);
  try { localStorage.setItem(KEY, collapsed ? "1" : "0"); } catch (_) { /* storage off */ }
}

// collapse, expand: the two buttons (a template may have left either out).
export function setupSidebarToggle(collapse, expand) {
  document.body.classList.toggle("sidebar-collapsed", stored());
  if (collapse) collapse.addEventListener("click", () => { setCollapsed(true); if (expand) expand.focus(); });
  if (expand) expand.addEventListener("click", () => { setCollapsed(false); if (collapse) collapse.focus(); });
}
