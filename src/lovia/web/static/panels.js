// The sidebar's panels (issue 31): Schedules, the Memory editor, Settings (always: its
// General pane needs no config.json) and the Files
// panel, each a dialog of its own module, and the composer's attachments; this wires their
// buttons to the page and keeps them in step with the open chat's agent.

import { getJSON } from "./api.js";
import { Attachments } from "./attach.js";
import { FilesPanel } from "./files.js";
import { MemoryEditor } from "./memory.js";
import { SchedulesDialog } from "./schedules.js";
import { SettingsDialog } from "./settings.js";
import { setWorkspaceAgent } from "./workspace.js";

// buttons: { schedules, memory, settings, files, attach: { button, picker, box, composer } };
// page: { agent(), openChat(id), toast(text, type), modelChanged(), chrome }; info: GET /api/info.
// Returns { update(), attachments }: call update() when the chat's agent changes.
export async function setupPanels(buttons, page, info) {
  const features = info.features || {};
  buttons.schedules.hidden = !features.scheduling;
  new SchedulesDialog(buttons.schedules, page);
  buttons.settings.hidden = false;
  new SettingsDialog(buttons.settings, { changed: page.modelChanged, toast: page.toast,
    configurable: Boolean(features.model_config), chrome: page.chrome });
  const memory = new MemoryEditor(buttons.memory, page);
  const files = new FilesPanel(buttons.files, page);
  const attachments = new Attachments(buttons.attach, page);
  let agents = [];
  if (features.memory || features.workspace) agents = await getJSON("api/agents").catch(() => []);
  memory.known(agents);
  const withWorkspace = new Set(agents.filter((a) => a.workspace).map((a) => a.name));
  const update = () => {
    memory.update();
    const has = withWorkspace.has(page.agent());
    setWorkspaceAgent(has ? page.agent() : null);
    files.setAvailable(has, has ? page.agent() : null);
    attachments.setAvailable(has);
  };
  update();
  return { update, attachments };
}
