// The token prompt: a server started with --token answers 401 (code server_token) until the
// browser holds its cookie, and again if the cookie goes or the server's token changes. The
// page asks for the token and trades it at /?token=... (the server sets an HttpOnly cookie
// and takes the token out of the address bar); the page never keeps it. A 401 from an auth=
// dependency of the app's own sends the browser to ChatUI(login_url=...), {next} replaced by
// the page's path, or says the user is signed out.

import { onUnauthorized } from "./api.js";
import { pageConfig } from "./config.js";
import { t } from "./i18n.js";

export function askForToken(parts) {
  const { dialog, form, input } = parts;
  document.body.dataset.needsToken = "true";
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    input.value = "";
    location.assign(`./?token=${encodeURIComponent(token)}${location.hash}`);
  });
  if (!dialog.open) dialog.showModal();
  input.focus();
}

export function handleUnauthorized(parts, toast) {
  onUnauthorized((err) => {
    const login = pageConfig().login_url;
    if (err.code === "server_token") askForToken(parts);
    else if (typeof login === "string" && login) {
      const next = encodeURIComponent(location.pathname + location.search);
      location.assign(login.replace("{next}", next));
    } else toast(t("auth.signedOut"), "error");
  });
}
