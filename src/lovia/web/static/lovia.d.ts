// Types of window.lovia, the chat page's extension API, for the editor of a ChatUI(scripts=...)
// module. `lovia web init-ui` writes an extension.js whose first lines point here:
//   // @ts-check
//   /// <reference path=".../lovia/web/static/lovia.d.ts" />
// The page's other modules, ids and class names are internal; this file is the contract.

export {};

declare global {
  interface Window {
    readonly lovia: Lovia.Api;
  }
}

declare namespace Lovia {
  /** What undoes a register* call, provideContext or on: brings back what it replaced. */
  type Undo = () => void;

  type Theme = "light" | "dark";

  /** A frozen snapshot of the page; read `lovia.state` again for the current one. */
  interface State {
    /** The open chat's id; null for a new chat not sent yet. */
    readonly sessionId: string | null;
    /** The agent the open chat talks to. */
    readonly agent: string | null;
    readonly theme: Theme;
    readonly lang: string;
    /** A run is streaming into the open chat. */
    readonly busy: boolean;
    /** The open view's id (registerView), or null while the chat shows. */
    readonly view: string | null;
  }

  interface Usage {
    readonly input_tokens?: number;
    readonly output_tokens?: number;
    readonly [key: string]: unknown;
  }

  /** Each event's payload (frozen). */
  interface Events {
    /** Another chat opened (sessionId null: a new chat). */
    session: { readonly sessionId: string | null };
    /** The agent switcher picked another agent. */
    agent: { readonly agent: string };
    /** A run started in the open chat. */
    "run-start": { readonly sessionId: string | null };
    /** A run of the open chat ended, or the page stopped following it ("detached"). */
    "run-end": {
      readonly sessionId: string | null;
      readonly status: "done" | "error" | "cancelled" | "detached";
      readonly usage: Usage | null;
    };
    theme: { readonly theme: Theme };
    /** A view opened or closed (view null: the chat shows again). */
    view: { readonly view: string | null };
  }

  /** What a renderer, and a tool view's render, are called with besides their element. */
  interface RenderContext {
    readonly theme: Theme;
    readonly lang: string;
    /** The app's path prefix ("" at the root); lovia.url(path) adds it for you. */
    readonly basePath: string;
    /** The id of the tool call whose result this is, when it is one. */
    readonly callId: string | null;
    /** The result just arrived (true) or is drawn from the chat's history (false). */
    readonly live?: boolean;
    /** Send text as the user, from a click in the component. */
    readonly send?: (text: string) => void;
  }

  /** A drawing returns nothing, a cleanup (run before the next drawing or when the node
   * leaves the page), or a promise of either. */
  type Drawn = void | (() => void) | Promise<void | (() => void)>;

  /** Draws a UI component, ui_result(kind, props), into el. */
  interface Renderer<P = Record<string, unknown>> {
    render(el: HTMLElement, props: P, ctx: RenderContext): Drawn;
  }

  /** One tool call as a tool view sees it (frozen). */
  interface ToolCall {
    readonly id: string;
    readonly name: string;
    /** The call's arguments, parsed; undefined when they are not JSON. */
    readonly args: Record<string, unknown> | undefined;
    readonly status: "running" | "awaiting" | "done" | "error";
    /** The result's text, once there is one. */
    readonly result?: unknown;
    readonly isError?: boolean;
  }

  /** How a tool's cards read: a one-line summary, and/or a body drawn in place of the raw
   * arguments and result (which stay behind "Source"). Registered under a tool's name, or
   * "*" for every tool; the tool's own fields come first. */
  interface ToolView {
    summary?(tool: ToolCall): string | null | undefined;
    render?(el: HTMLElement, tool: ToolCall, ctx: RenderContext): void | (() => void);
  }

  /** The message an action's button sits under (frozen). */
  interface Message {
    readonly sessionId: string | null;
    readonly role: "assistant" | "user";
    /** The message's text (an answer's Markdown source). */
    readonly text: string;
    /** The ref of the user message this answer answers ("<run_id>:<n>"), when known. */
    readonly ref: string | null;
  }

  /** A button in each answer's actions (data-action="<id>"). */
  interface MessageAction {
    /** The button's name (its tooltip and accessible label). */
    label?: string;
    /** Text, or an <svg> (sanitized) drawn in place of the label. */
    icon?: string;
    /** Show the button under this message? Default: always. */
    when?(msg: Message): boolean;
    /** A toggle's state, as aria-pressed. */
    pressed?(msg: Message): boolean;
    /** The click; what it throws shows as an error toast. */
    run(msg: Message): void | Promise<void>;
  }

  interface ViewContext {
    /** What follows the view's id in ?view=<id>/<path>. Untrusted: show it as text only. */
    readonly path: string;
  }

  /** A page of your own drawn in place of the chat, opened by ?view=<id>[/<path>]. */
  interface View {
    title?: string;
    render(el: HTMLElement, ctx: ViewContext): Drawn;
  }

  interface Api {
    /** The lovia version serving the page. */
    readonly version: string;
    /** Settles once the page has started (its chat list and the chat in the URL loaded). */
    readonly ready: Promise<void>;
    readonly state: State;
    on<E extends keyof Events>(event: E, fn: (payload: Events[E]) => void): Undo;
    /** Send text as the user (queued for the next step while a run streams). */
    send(text: string): void;
    /** Put text in the composer for the user to edit and send. */
    setDraft(text: string): void;
    newChat(): void;
    openSession(id: string): void;
    toast(text: string, options?: { type?: "info" | "error" }): void;
    /** fetch() for a path of the app ("/api/...", your own routes), its prefix added. */
    fetch(path: string, init?: RequestInit): Promise<Response>;
    /** The URL of an app path, its prefix added: for <img src>, EventSource, links. */
    url(path: string): string;
    /** A UI string in the page's language, {name} placeholders filled from params. */
    t(key: string, params?: Record<string, string | number>): string;
    registerRenderer<P = Record<string, unknown>>(kind: string, renderer: Renderer<P>): Undo;
    getRenderer(kind: string): Renderer | null;
    registerToolView(name: string, view: ToolView): Undo;
    registerMessageAction(id: string, action: MessageAction): Undo;
    /** Ask every answer's actions again (after what when() or pressed() read changed). */
    refreshMessageActions(): void;
    registerView(id: string, view: View): Undo;
    /** Open a view: "<id>" or "<id>/<path>"; throws for an id with no view. */
    openView(target: string): void;
    closeView(): void;
    /** Add key to the context each run starts with, read from fn() at send time. */
    provideContext(key: string, fn: () => unknown): Undo;
  }
}
