// HTML pages from tools (show_html): written into an iframe the page never shares
// anything with. The frame is sandboxed without allow-same-origin (an opaque origin: no
// cookies, no storage, no way into this page), loads the server's empty /frame document
// under its own Content-Security-Policy (inline script and style only, no network), and
// gets the HTML once by postMessage. The page listens to nothing the frame says.

export function htmlFrame(html, title) {
  const frame = document.createElement("iframe");
  frame.className = "html-frame";
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("title", title || "HTML");
  frame.loading = "lazy";
  let sent = false;
  frame.addEventListener("load", () => {
    if (sent || !frame.contentWindow) return;
    sent = true;
    frame.contentWindow.postMessage({ html: String(html) }, "*");
  });
  frame.src = "frame";
  return frame;
}
