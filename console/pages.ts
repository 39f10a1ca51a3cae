// The console's pages. Each renders into `main` from the public API; nothing here knows a secret except the
// create and rotate answers, which are shown once and never stored.
import {
  BROADCASTED,
  DEFAULT_PAGE_LIMIT,
  EVENT_KINDS,
  MAX_ADDRESSES_PER_REQUEST,
  MAX_DESCRIPTION_LENGTH,
  MAX_PAGE_LIMIT,
  TRON_CHAINS,
} from "../common/contract/index.ts";
import { client, compact, describeDestination, unwrap, type Destination, type DestinationInput, type EventView, type RecoverRequest, type Subscription } from "./api.ts";
import { backfillPanel } from "./backfills.ts";
import { eventSummary } from "./event-summary.ts";
import { attempt, badge, errorText, field, h, notify, select, svg, time } from "./dom.ts";

export type Render = (main: HTMLElement) => Promise<(() => void) | void>;

/** Navigates; resolves once the router has taken the change (and cleared the last page's message). */
const go = (hash: string): Promise<void> =>
  new Promise((resolve) => {
    if (location.hash === hash) return resolve();
    window.addEventListener("hashchange", () => resolve(), { once: true });
    location.hash = hash;
  });

function eventsChooser(selected: string[]): { el: HTMLElement; value: () => string[] } {
  const boxes = EVENT_KINDS.map((k) => h("input", { type: "checkbox", value: k, checked: selected.includes(k), id: `kind-${k}` }));
  const el = h(
    "fieldset",
    {},
    h("legend", {}, "Events"),
    ...boxes.map((b) => h("div", { class: "check" }, b, h("label", { for: b.id }, b.value))),
  );
  return { el, value: () => boxes.filter((b) => b.checked).map((b) => b.value) };
}

/** The new secret, once, with a copy button (after create and rotate only). */
function secretBox(secret: string): HTMLElement {
  const out = h("output", { class: "secret", "aria-label": "New signing secret" }, secret);
  return h(
    "div",
    { class: "secret-box", role: "region", "aria-label": "Signing secret" },
    h("p", {}, "The signing secret, shown this once: copy it now."),
    out,
    h("button", { type: "button", onclick: () => void navigator.clipboard?.writeText(secret).then(() => notify("Secret copied.")) }, "Copy secret"),
  );
}

/**
 * A subscription's destination, new or as stored (`initial`): an HTTPS URL, or a queue on a broker the operator
 * registered (`bun run brokers add`): an AMQP exchange and routing key, or a NATS subject. Only the chosen type's
 * fields are in the form (a hidden required field would block the submit).
 */
function destinationChooser(initial?: Destination): { el: HTMLElement; value: () => DestinationInput; sync: () => void } {
  const https = initial?.type === "https" ? initial : undefined;
  const amqp = initial?.type === "amqp" ? initial : undefined;
  const nats = initial?.type === "nats" ? initial : undefined;
  const type = select(["https", "amqp", "nats"], initial?.type ?? "https", { name: "destinationType" });
  const url = h("input", { type: "url", required: true, placeholder: "https://example.com/webhooks", autocomplete: "off", value: https?.url ?? "" });
  // One broker input per type: a control lives in one place of the page, and each type's fields are kept apart.
  const amqpBroker = h("input", { type: "text", required: true, autocomplete: "off", value: amqp?.broker ?? "" });
  const natsBroker = h("input", { type: "text", required: true, autocomplete: "off", value: nats?.broker ?? "" });
  const exchange = h("input", { type: "text", required: true, autocomplete: "off", value: amqp?.exchange ?? "" });
  const routingKey = h("input", { type: "text", autocomplete: "off", value: amqp?.routingKey ?? "" });
  const subject = h("input", { type: "text", required: true, autocomplete: "off", placeholder: "payments.tron", value: nats?.subject ?? "" });
  const byType: Record<string, HTMLElement[]> = {
    https: [field("Destination URL (https)", url)],
    amqp: [field("Broker", amqpBroker, "A name the operator registered."), field("Exchange", exchange), field("Routing key", routingKey)],
    nats: [field("Broker", natsBroker, "A name the operator registered."), field("Subject", subject, "A JetStream stream must capture it.")],
  };
  const fields = h("div", {});
  // Also after a form reset, which puts the select back without a change event.
  const sync = () => fields.replaceChildren(...byType[type.value]!);
  sync();
  type.addEventListener("change", sync);
  const value = (): DestinationInput => {
    if (type.value === "amqp") return { type: "amqp", broker: amqpBroker.value.trim(), exchange: exchange.value.trim(), routingKey: routingKey.value.trim() };
    if (type.value === "nats") return { type: "nats", broker: natsBroker.value.trim(), subject: subject.value.trim() };
    return { type: "https", url: url.value };
  };
  return { el: h("div", {}, field("Destination type", type), fields), value, sync };
}

export const subscriptionsPage: Render = async (main) => {
  const destination = destinationChooser();
  const description = h("input", { type: "text", maxlength: MAX_DESCRIPTION_LENGTH });
  const kinds = eventsChooser([BROADCASTED]);
  const created = h("div");
  const list = h("tbody");
  const more = h("button", { type: "button", hidden: true }, "More");
  let token: string | undefined;
  async function load(reset: boolean) {
    const page = await unwrap(client.GET("/v1/subscriptions", { params: { query: compact({ limit: DEFAULT_PAGE_LIMIT, nextPageToken: reset ? undefined : token }) } }));
    if (reset) list.replaceChildren();
    for (const s of page.items) {
      list.append(
        h("tr", {},
          h("td", {}, h("a", { href: `#/subscriptions/${s.id}` }, s.id)),
          h("td", { class: "url" }, describeDestination(s.destination)),
          h("td", {}, badge(s.status)),
          h("td", {}, s.events.join(", ")),
          h("td", {}, s.description)),
      );
    }
    token = page.nextPageToken ?? undefined;
    more.hidden = !token;
  }
  more.addEventListener("click", () => void attempt(() => load(false)));
  const form = h(
    "form",
    { "aria-label": "Create a subscription" },
    h("h2", {}, "New subscription"),
    destination.el,
    kinds.el,
    field("Description", description),
    h("button", { type: "submit" }, "Create subscription"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      const s = await unwrap(client.POST("/v1/subscriptions", {
        body: { destination: destination.value(), events: kinds.value(), description: description.value },
      }));
      created.replaceChildren(
        h("p", {}, "Created ", h("a", { href: `#/subscriptions/${s.id}` }, s.id), "."),
        secretBox(s.destination.secret ?? ""),
      );
      notify(`Subscription ${s.id} created.`);
      form.reset();
      destination.sync();
      await load(true);
    });
  });
  main.replaceChildren(
    h("h1", {}, "Subscriptions"),
    form,
    created,
    h("table", {},
      h("caption", {}, "Your subscriptions, newest first"),
      h("thead", {}, h("tr", {}, ...["Id", "Destination", "Status", "Events", "Description"].map((c) => h("th", { scope: "col" }, c)))),
      list),
    more,
  );
  await load(true);
};

/**
 * The hourly success rates, oldest first: a dot for each hour with attempts (so a single busy hour shows), joined by a
 * line only across consecutive such hours (an hour without attempts is a gap, not a slope).
 */
function sparkline(rates: (number | null)[]): SVGElement {
  const w = 240, hgt = 40, pad = 3, step = (w - 2 * pad) / Math.max(1, rates.length - 1);
  const at = (r: number, i: number) => ({ x: (pad + i * step).toFixed(1), y: (pad + (1 - r) * (hgt - 2 * pad)).toFixed(1) });
  const runs: string[][] = [[]];
  const dots: SVGElement[] = [];
  rates.forEach((r, i) => {
    if (r === null) {
      if (runs[runs.length - 1]!.length > 0) runs.push([]);
      return;
    }
    const { x, y } = at(r, i);
    runs[runs.length - 1]!.push(`${x},${y}`);
    dots.push(svg("circle", { cx: x, cy: y, r: 2.5, fill: "currentColor" }));
  });
  const lines = runs.filter((run) => run.length > 1).map((run) => svg("polyline", { points: run.join(" "), fill: "none", stroke: "currentColor", "stroke-width": 2 }));
  const label = `Success rate per hour over the last 24 hours: ${rates.map((r) => (r === null ? "none" : `${Math.round(r * 100)}%`)).join(", ")}`;
  return svg("svg", { viewBox: `0 0 ${w} ${hgt}`, width: w, height: hgt, role: "img", "aria-label": label, class: "sparkline" }, ...lines, ...dots);
}

function pct(r: number | null): string {
  return r === null ? "–" : `${(r * 100).toFixed(1)}%`;
}

async function healthPanel(subId: string): Promise<HTMLElement> {
  const hl = await unwrap(client.GET("/v1/subscriptions/{id}/health", { params: { path: { id: subId } } }));
  return h("section", { "aria-labelledby": "health-h", class: "panel" },
    h("h2", { id: "health-h" }, "Health"),
    sparkline(hl.hourlySuccessRate),
    h("dl", {},
      h("dt", {}, "Success, last hour"), h("dd", {}, `${pct(hl.lastHour.successRate)} of ${hl.lastHour.attempts}`),
      h("dt", {}, "Success, 24 hours"), h("dd", {}, `${pct(hl.last24Hours.successRate)} of ${hl.last24Hours.attempts}`),
      h("dt", {}, "Last success"), h("dd", {}, time(hl.lastSuccess)),
      h("dt", {}, "Last failure"), h("dd", { class: "last-failure" }, hl.lastFailure ? `${time(hl.lastFailure.date)}: ${hl.lastFailure.reason}` : "none"),
      h("dt", {}, "Consecutive failures"), h("dd", {}, String(hl.consecutiveFailures)),
      h("dt", {}, "Duration p50 / p99"), h("dd", {}, `${hl.durationMs.p50 ?? "–"} / ${hl.durationMs.p99 ?? "–"} ms`),
      h("dt", {}, "Pending"), h("dd", {}, String(hl.pending))));
}

function addressesPanel(sub: Subscription): HTMLElement {
  const text = h("textarea", { rows: 6, placeholder: "One address per line (T…); commas and spaces also separate" });
  const chain = select([...TRON_CHAINS], "tron:mainnet");
  const results = h("div", { "aria-live": "polite" });
  const list = h("ul", { class: "addresses" });
  const more = h("button", { type: "button", hidden: true }, "More addresses");
  let token: string | undefined;
  async function load(reset: boolean) {
    const page = await unwrap(client.GET("/v1/subscriptions/{id}/filters/addresses", {
      params: { path: { id: sub.id }, query: compact({ limit: MAX_PAGE_LIMIT, nextPageToken: reset ? undefined : token }) },
    }));
    if (reset) list.replaceChildren();
    for (const a of page.items) {
      const remove = h("button", { type: "button", class: "small", "aria-label": `Remove ${a.address}` }, "Remove");
      remove.addEventListener("click", () => void attempt(async () => {
        await unwrap(client.PATCH("/v1/subscriptions/{id}/filters/addresses", { params: { path: { id: sub.id } }, body: { remove: [a] } }));
        await load(true);
      }));
      list.append(h("li", {}, h("code", {}, a.address), ` ${a.chainId} `, remove));
    }
    token = page.nextPageToken ?? undefined;
    more.hidden = !token;
  }
  more.addEventListener("click", () => void attempt(() => load(false)));
  const form = h("form", { "aria-label": "Add addresses" }, field("Addresses to add", text, `Paste thousands at once; sent in requests of ${MAX_ADDRESSES_PER_REQUEST.toLocaleString("en-US")}.`), field("Chain", chain),
    h("button", { type: "submit" }, "Add addresses"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      const entries = text.value.split(/[\s,;]+/).filter(Boolean).map((address) => ({ chainId: chain.value, address }));
      let added = 0;
      const skipped: { input: { address: string }; reason: string }[] = [];
      for (let i = 0; i < entries.length; i += MAX_ADDRESSES_PER_REQUEST) {
        const res = await unwrap(client.PATCH("/v1/subscriptions/{id}/filters/addresses", {
          params: { path: { id: sub.id } }, body: { add: entries.slice(i, i + MAX_ADDRESSES_PER_REQUEST) },
        }));
        added += res.results.added.length;
        skipped.push(...res.results.skipped);
      }
      results.replaceChildren(
        h("p", { class: "added-count" }, `${added} added, ${skipped.length} skipped, ${entries.length - added - skipped.length} already present.`),
        h("ul", { class: "skipped", "aria-label": "Skipped addresses" }, ...skipped.slice(0, 500).map((s) => h("li", {}, h("code", {}, s.input.address), `: ${s.reason}`))),
      );
      text.value = "";
      await load(true);
    });
  });
  void attempt(() => load(true));
  return h("section", { "aria-labelledby": "addr-h", class: "panel" }, h("h2", { id: "addr-h" }, "Addresses"), form, results, list, more);
}

/** The event list with filters, badges, payload, attempts, retry; polled so new events appear without a reload. */
function eventsPanel(subId: string | undefined): { el: HTMLElement; refresh: () => Promise<void> } {
  const statuses: EventView["status"][] = ["pending", "delivered", "failed"];
  const status = select(["", ...statuses], "", { name: "status" });
  const kind = select(["", ...EVENT_KINDS], "", { name: "kind" });
  const chain = select(["", ...TRON_CHAINS], "", { name: "chainId" });
  const txId = h("input", { type: "text", name: "txId", autocomplete: "off" });
  const address = h("input", { type: "text", name: "address", autocomplete: "off" });
  const since = h("input", { type: "datetime-local", name: "since" });
  const until = h("input", { type: "datetime-local", name: "until" });
  // On the all-events page, one subscription's events (the subscription's own page is already scoped to it).
  const subscription = h("input", { type: "text", name: "subscriptionId", autocomplete: "off", placeholder: "sub_…" });
  const rows = h("tbody");
  const detail = h("div", { class: "detail" });
  let open: string | undefined;
  const filters = () => ({
    subscriptionId: subId ?? subscription.value.trim(), status: status.value as EventView["status"] | "", kind: kind.value, chainId: chain.value, txId: txId.value.trim(),
    address: address.value.trim(), since: since.value ? new Date(since.value).toISOString() : undefined,
    until: until.value ? new Date(until.value).toISOString() : undefined, limit: DEFAULT_PAGE_LIMIT,
  });
  async function showDetail(e: EventView) {
    open = e.id;
    const atts = await unwrap(client.GET("/v1/subscriptions/{id}/events/{eventId}/attempts", {
      params: { path: { id: e.subscriptionId, eventId: e.id }, query: { limit: 50 } },
    }));
    const retry = h("button", { type: "button" }, "Retry");
    retry.addEventListener("click", () => void attempt(async () => {
      const r = await unwrap(client.POST("/v1/subscriptions/{id}/events/{eventId}/retry", { params: { path: { id: e.subscriptionId, eventId: e.id } } }));
      notify(`Event ${r.id} queued again.`);
      await refresh();
    }));
    detail.replaceChildren(
      h("h3", {}, `Event ${e.id} `, badge(e.status)),
      retry,
      h("h4", {}, "Payload"),
      h("pre", { class: "payload", tabindex: 0 }, JSON.stringify(e.payload, null, 2)),
      h("h4", {}, "Attempts"),
      h("table", { class: "attempts" },
        h("thead", {}, h("tr", {}, ...["When", "Trigger", "Status", "Error", "ms", "Response"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, ...atts.items.map((a) => h("tr", {},
          h("td", {}, time(a.date)), h("td", {}, a.trigger), h("td", {}, a.responseStatus === null ? "–" : String(a.responseStatus)),
          h("td", { class: "attempt-error" }, a.error ?? ""), h("td", {}, String(a.durationMs)),
          h("td", {}, h("code", {}, (a.responseBody ?? "").slice(0, 200))))))),
    );
  }
  // Pages of 50 shown, newest first: "Older events" adds one, and every refresh reads them all again by their tokens,
  // so a status that changed (a recover, a retry) shows on an older page as well as on the first.
  let pages = 1;
  const older = h("button", { type: "button", hidden: true }, "Older events");
  async function refresh() {
    const items: EventView[] = [];
    let token: string | undefined;
    for (let i = 0; i < pages; i++) {
      const page = await unwrap(client.GET("/v1/events", { params: { query: compact({ ...filters(), nextPageToken: token }) } }));
      items.push(...page.items);
      token = page.nextPageToken ?? undefined;
      if (!token) break;
    }
    older.hidden = !token;
    const empty = h("tr", { class: "empty" }, h("td", { colspan: 7 }, "No events match."));
    rows.replaceChildren(...(items.length === 0 ? [empty] : items.map((e) => {
      const view = h("button", { type: "button", class: "link" }, e.id);
      view.addEventListener("click", () => void attempt(() => showDetail(e)));
      return h("tr", { "data-event": e.id, "data-status": e.status },
        h("td", {}, view), h("td", {}, e.kind), h("td", { class: "summary" }, eventSummary(e.payload)), h("td", {}, badge(e.status)),
        h("td", {}, String(e.attempts)),
        h("td", {}, e.responseStatus === null ? "–" : String(e.responseStatus)), h("td", {}, time(e.dateCreated)));
    })));
    const current = open ? items.find((e) => e.id === open) : undefined;
    if (current) await showDetail(current);
  }
  older.addEventListener("click", () => void attempt(async () => {
    pages++;
    await refresh();
  }));
  const form = h("form", { class: "filters", "aria-label": "Event filters" },
    subId ? null : field("Subscription", subscription), field("Status", status), field("Kind", kind), field("Chain", chain),
    field("Transaction id", txId), field("Address", address), field("Since", since), field("Until", until), h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    pages = 1;
    void attempt(refresh);
  });
  const el = h("section", { "aria-labelledby": "ev-h", class: "panel" },
    // The all-events page is headed "Events" already: its panel searches the events of all of the key's subscriptions.
    h("h2", { id: "ev-h" }, subId ? "Events" : "Search events"), form,
    h("table", { class: "events" },
      h("caption", {}, "Newest first; refreshed every few seconds"),
      h("thead", {}, h("tr", {}, ...["Id", "Kind", "Details", "Status", "Attempts", "HTTP", "Created"].map((c) => h("th", { scope: "col" }, c)))),
      rows),
    older,
    detail);
  return { el, refresh };
}

export const subscriptionPage = (id: string): Render => async (main) => {
  const sub = await unwrap(client.GET("/v1/subscriptions/{id}", { params: { path: { id } } }));
  const destination = destinationChooser(sub.destination);
  const description = h("input", { type: "text", maxlength: MAX_DESCRIPTION_LENGTH, value: sub.description });
  const kinds = eventsChooser(sub.events);
  const secretArea = h("div");
  // The destination as the form holds it (its stored value until edited): saving, enabling or disabling never turns
  // a queue destination into an https one.
  const put = (status: Subscription["status"]) => unwrap(client.PUT("/v1/subscriptions/{id}", {
    params: { path: { id } },
    body: { destination: destination.value(), events: kinds.value(), description: description.value, status },
  }));
  const edit = h("form", { "aria-label": "Edit subscription" }, h("h2", {}, "Settings"), destination.el, kinds.el,
    field("Description", description), h("button", { type: "submit" }, "Save"));
  edit.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      await put(sub.status);
      notify("Saved.");
    });
  });
  const toggle = h("button", { type: "button" }, sub.status === "enabled" ? "Disable" : "Enable");
  toggle.addEventListener("click", () => void attempt(async () => {
    const s = await put(sub.status === "enabled" ? "disabled" : "enabled");
    notify(`Subscription ${s.status}.`);
    await render(subscriptionPage(id));
  }));
  const rotate = h("button", { type: "button" }, "Rotate secret");
  rotate.addEventListener("click", () => void attempt(async () => {
    const s = await unwrap(client.POST("/v1/subscriptions/{id}/secrets/rotate", { params: { path: { id } } }));
    secretArea.replaceChildren(secretBox(s.destination.secret ?? ""));
    notify("Secret rotated; the previous one keeps signing for 24 hours.");
  }));
  const del = h("button", { type: "button", class: "danger" }, "Delete");
  del.addEventListener("click", () => void attempt(async () => {
    if (!confirm(`Delete subscription ${id}? Its addresses and events are deleted with it.`)) return;
    await unwrap(client.DELETE("/v1/subscriptions/{id}", { params: { path: { id } } }));
    await go("#/subscriptions");
    notify(`Subscription ${id} deleted.`);
  }));
  const tests = EVENT_KINDS.map((k) => {
    const b = h("button", { type: "button", class: "small" }, `Send test ${k}`);
    b.addEventListener("click", () => void attempt(async () => {
      const e = await unwrap(client.POST("/v1/subscriptions/{id}/test", { params: { path: { id } }, body: { kind: k } }));
      notify(`Test event ${e.id} sent.`);
      await events.refresh();
    }));
    return b;
  });
  const recoverSince = h("input", { type: "datetime-local", required: true });
  const recoverable: NonNullable<RecoverRequest["status"]>[] = ["failed", "delivered"];
  const recoverStatus = select(recoverable, "failed");
  const recover = h("form", { "aria-label": "Recover events" }, h("h3", {}, "Recover"), field("Since", recoverSince, "At most 14 days ago."),
    field("Events that", recoverStatus), h("button", { type: "submit" }, "Recover"));
  recover.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      const since = recoverSince.value ? new Date(recoverSince.value).toISOString() : "";
      const r = await unwrap(client.POST("/v1/subscriptions/{id}/events/recover", { params: { path: { id } }, body: { since, status: recoverStatus.value as RecoverRequest["status"] } }));
      notify(`${r.recovered} ${r.recovered === 1 ? "event" : "events"} queued again.`);
      await events.refresh();
    });
  });
  const events = eventsPanel(id);
  const backfills = backfillPanel(id);
  const health = h("div");
  const loadHealth = async () => health.replaceChildren(await healthPanel(id));
  main.replaceChildren(
    h("p", {}, h("a", { href: "#/subscriptions" }, "← Subscriptions")),
    h("h1", {}, `Subscription ${id} `, badge(sub.status)),
    h("div", { class: "actions" }, toggle, rotate, del),
    secretArea,
    h("div", { class: "grid" }, edit, health),
    h("section", { class: "panel", "aria-label": "Test events" }, h("h2", {}, "Send a test event"), h("div", { class: "actions" }, ...tests)),
    addressesPanel(sub),
    backfills.el,
    events.el,
    h("section", { class: "panel" }, recover),
  );
  await Promise.all([events.refresh(), loadHealth(), backfills.refresh()]);
  const timer = setInterval(() => void Promise.all([events.refresh(), loadHealth(), backfills.refresh()]).catch((err) => notify(errorText(err), "error")), 2_000);
  return () => clearInterval(timer);
};

export const eventsPage: Render = async (main) => {
  const events = eventsPanel(undefined);
  main.replaceChildren(h("h1", {}, "Events"), events.el);
  await events.refresh();
  const timer = setInterval(() => void events.refresh().catch((err) => notify(errorText(err), "error")), 3_000);
  return () => clearInterval(timer);
};

let cleanup: (() => void) | void;
export async function render(page: Render): Promise<void> {
  cleanup?.();
  cleanup = undefined;
  const main = document.getElementById("main")!;
  try {
    cleanup = await page(main);
  } catch (err) {
    main.replaceChildren(h("p", { role: "alert", class: "error" }, errorText(err)));
  }
  main.focus();
}
