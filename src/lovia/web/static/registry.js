// The stacks behind window.lovia's register* calls, and the component renderers by kind.
// A module of its own so the built-in renderers (components.js) register before any
// extension script runs: extensions.js loads components.js first, and an extension's
// renderer for "table" then goes on top of the built-in one, which getRenderer still finds.

// Registering pushes onto the key's stack; undoing removes that entry wherever it is, so
// what it replaced comes back whatever order the undos come in.
export function push(map, key, value) {
  const stack = map.get(key) || [];
  const entry = { value };
  stack.push(entry);
  map.set(key, stack);
  return () => {
    const i = stack.indexOf(entry);
    if (i >= 0) stack.splice(i, 1);
  };
}

export function top(map, key) {
  const stack = map.get(key);
  return stack && stack.length ? stack[stack.length - 1].value : undefined;
}

export const renderers = new Map(); // kind -> stack of { value }

export function rendererFor(kind) { return top(renderers, kind); }

// The built-in renderers register through the same path, before any extension script.
export function registerBuiltin(kind, renderer) { push(renderers, kind, renderer); }
