// Other tabs and windows: the server's lifecycle events (GET /api/events) say when a run
// starts or ends, or a chat is made or renamed. The chat list follows all of them; the open
// chat, when this tab is not the one driving it, is drawn again (and follows a run that
// another tab started).

export function followEvents({ onChat, onList, isOwn = () => false }) {
  if (typeof EventSource === "undefined") return null;
  const source = new EventSource("api/events");
  const handle = (name) => (message) => {
    let data = {};
    try { data = JSON.parse(message.data); } catch (_) { return; }
    onList(name, data);
    if (data.run_id && isOwn(data.run_id)) return; // this tab drew it already
    if (data.session_id) onChat(name, data.session_id);
  };
  for (const name of ["run_started", "run_finished", "session_created", "session_retitled"]) {
    source.addEventListener(name, handle(name));
  }
  return source;
}
