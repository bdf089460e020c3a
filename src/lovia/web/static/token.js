// The token prompt: a server started with --token answers 401 until the browser holds its
// cookie. The page asks for the token and trades it at /?token=... (the server sets an
// HttpOnly cookie and takes the token out of the address bar); the page never keeps it.

export function askForToken(parts) {
  const { dialog, form, input } = parts;
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
