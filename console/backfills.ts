// The backfill panel of a subscription's page: start a backfill (chain, since, optional addresses), and each job's
// progress bar, counts and cancel button, refreshed with the page while any runs.
import { TRON_CHAINS } from "../common/contract/index.ts";
import { client, unwrap, type Backfill } from "./api.ts";
import { attempt, badge, field, h, notify, select, time } from "./dom.ts";

const OPEN = ["queued", "running"];

export function backfillPanel(subId: string): { el: HTMLElement; refresh: () => Promise<void> } {
  const chain = select([...TRON_CHAINS], "tron:mainnet", { name: "backfill-chain" });
  const since = h("input", { type: "datetime-local", required: true, name: "backfill-since" });
  const addresses = h("textarea", { rows: 2, name: "backfill-addresses", placeholder: "Optional: some of the subscription's addresses (T…), one per line" });
  const rows = h("tbody");
  const form = h("form", { "aria-label": "Start a backfill" },
    field("Chain", chain), field("Since", since, "Blocks from this time to the solidified head; at most 30 days."),
    field("Addresses", addresses, "Empty: all of the subscription's addresses on the chain."),
    h("button", { type: "submit" }, "Backfill"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void attempt(async () => {
      const list = addresses.value.split(/[\s,;]+/).filter(Boolean);
      const job = await unwrap(client.POST("/v1/subscriptions/{id}/backfills", {
        params: { path: { id: subId } },
        body: { chainId: chain.value, since: new Date(since.value).toISOString(), ...(list.length > 0 ? { addresses: list } : {}) },
      }));
      notify(`Backfill ${job.id} queued: blocks ${job.fromBlock} to ${job.toBlock}.`);
      await refresh();
    });
  });

  async function refresh() {
    const page = await unwrap(client.GET("/v1/subscriptions/{id}/backfills", { params: { path: { id: subId }, query: { limit: 20 } } }));
    rows.replaceChildren(...page.items.map(row));
  }

  function row(b: Backfill): HTMLElement {
    const p = b.progress;
    const bar = h("progress", { max: Math.max(1, p.blocksTotal), value: p.blocksScanned, "aria-label": `Backfill ${b.id} progress` });
    const cancel = h("button", { type: "button", class: "small", hidden: !OPEN.includes(b.status) }, "Cancel");
    cancel.addEventListener("click", () => void attempt(async () => {
      await unwrap(client.POST("/v1/subscriptions/{id}/backfills/{backfillId}/cancel", { params: { path: { id: subId, backfillId: b.id } } }));
      notify(`Backfill ${b.id} canceled.`);
      await refresh();
    }));
    return h("tr", { "data-backfill": b.id },
      h("td", {}, h("code", {}, b.id)),
      h("td", {}, b.chainId),
      h("td", {}, badge(b.status), b.error ? ` ${b.error}` : ""),
      h("td", {}, bar, ` ${p.blocksScanned} / ${p.blocksTotal} blocks`),
      h("td", {}, `${p.eventsCreated} made, ${p.eventsSkipped} skipped`),
      h("td", {}, time(b.dateCreated)),
      h("td", {}, cancel));
  }

  const el = h("section", { "aria-labelledby": "backfill-h", class: "panel" },
    h("h2", { id: "backfill-h" }, "Backfills"), form,
    h("table", { "aria-label": "Backfills" },
      h("thead", {}, h("tr", {}, ...["Job", "Chain", "Status", "Progress", "Events", "Created", ""].map((c) => h("th", {}, c)))),
      rows));
  return { el, refresh };
}
