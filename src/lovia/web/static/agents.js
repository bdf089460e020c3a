// The agent switcher: shown when the server has several agents. A new chat goes to the
// chosen agent (remembered in localStorage); an opened chat shows the agent it belongs to.

const STORE_KEY = "lovia.agent";

export class AgentSwitcher {
  // parts: { select, label }; names: the served agents; onPick(name): the user chose one
  constructor(parts, names, onPick) {
    this.select = parts.select;
    this.label = parts.label;
    this.names = names;
    let pick = null;
    try { pick = localStorage.getItem(STORE_KEY); } catch (_) { /* private mode */ }
    this.current = names.includes(pick) ? pick : names[0] || null;
    this.select.replaceChildren(...names.map((name) => {
      const option = document.createElement("option");
      option.value = name;
      option.textContent = name;
      return option;
    }));
    const several = names.length > 1;
    this.select.hidden = !several;
    this.label.hidden = several;
    this.show(this.current);
    this.select.addEventListener("change", () => {
      this.current = this.select.value;
      try { localStorage.setItem(STORE_KEY, this.current); } catch (_) { /* private mode */ }
      onPick(this.current);
    });
  }

  // Show the agent of the open chat (one this server serves), without changing the pick.
  show(name) {
    const shown = this.names.includes(name) ? name : this.current;
    this.select.value = shown || "";
    this.label.textContent = shown || "";
    return shown;
  }
}
