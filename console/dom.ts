// A few DOM helpers: elements from attributes and children, and the page's message area.
import { ApiError } from "./api.ts";

type Child = Node | string | null | undefined | false;
type Attrs = Record<string, string | boolean | number | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
export function svg(tag: string, attrs: Record<string, string | number>, ...children: Node[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  el.append(...children);
  return el;
}

let uid = 0;
/** A labelled control: the label is tied to the control by id (screen readers, clicking the label). */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, hint?: string): HTMLElement {
  control.id ||= `f${++uid}`;
  const hintEl = hint ? h("small", { id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control, hintEl);
}

export function select(options: string[], value = "", attrs: Attrs = {}): HTMLSelectElement {
  const el = h("select", attrs);
  for (const o of options) el.append(h("option", { value: o, selected: o === value }, o === "" ? "any" : o));
  return el;
}

/** Empties the live region: a message speaks of the page it was shown on (the router calls this on navigation). */
export function clearMessages(): void {
  document.getElementById("messages")!.replaceChildren();
}

/** Shows a message (an API error as the API words it) in the page's live region. */
export function notify(message: string, kind: "error" | "ok" = "ok"): void {
  const area = document.getElementById("messages")!;
  area.replaceChildren(h("p", { class: kind, role: kind === "error" ? "alert" : "status" }, message));
}

export function errorText(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** Runs an action, reporting its failure in the message area. */
export async function attempt(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (err) {
    notify(errorText(err), "error");
  }
}

export function badge(status: string): HTMLElement {
  return h("span", { class: `badge badge-${status}` }, status);
}

export function time(iso: string | null): string {
  return iso ? new Date(iso).toLocaleString() : "never";
}
