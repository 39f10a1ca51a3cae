// Match conditions end to end through the simulator and the verifying HTTPS receiver: assets with minAmount,
// directions with roles (a self-transfer), zero-value transfers off by default and on by request, conditions on the
// final kinds too, and a change of conditions (PUT, PUT without match) that reaches the matcher before the response.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { blockWith, startMatcherBed, type MatchConditionsInit, type MatcherBed } from "../../support/matcher-bed.ts";

// Fresh addresses: no recorded or generated block touches them.
const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const OTHER_TOKEN = "TFkyVCGCU1AQYpTyZgtZ2bFJX8EszoTx96";
const CHAIN = "tron:mainnet" as const;
const LAG = 2;

type Payload = { kind: string; subscriptionId: string; data: { txId: string; amount: string; matchedAddresses: { address: string; role: string }[] } };

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG } });
});
afterAll(async () => {
  await t?.stop();
});

const payloads = (path: string) => t.bed.receiver.deliveries(path).map((d) => JSON.parse(d.body) as Payload);
/** tx id → roles of every event of `kind` the receiver got on `path`. */
const rolesByTx = (path: string, kind = "wallet.transfer.broadcasted") =>
  Object.fromEntries(payloads(path).filter((p) => p.kind === kind).map((p) => [p.data.txId, p.data.matchedAddresses.map((m) => m.role)]));

async function watching(path: string, address: string, opts: { match?: MatchConditionsInit; events?: string[] } = {}) {
  const sub = await t.subscribe(path, opts);
  await t.watch(sub, CHAIN, [address]);
  return sub;
}

/** Produces a block with `transfers`, waits until the matcher has handed its events over, returns its tx ids. */
async function block(transfers: Parameters<typeof blockWith>[1]): Promise<string[]> {
  const b = await blockWith(t.sims[CHAIN]!, transfers);
  await t.matcher!.waitForBlock(CHAIN, b.number);
  return b.txIds;
}

describe("match conditions through the matcher", () => {
  test("assets with minAmount: only listed assets at or above their minimum make events", async () => {
    const [A, B] = [fresh(), fresh()];
    const sub = await watching("/m-assets", A, {
      match: { assets: { items: [{ standard: "TRC20", contract: USDT, minAmount: "1000000" }, { standard: "TRX" }] } },
    });
    const all = await watching("/m-assets-all", A);
    const tx = await block([
      { type: "trc20", from: B, to: A, amount: "999999", contract: USDT },
      { type: "trc20", from: B, to: A, amount: "1000000", contract: USDT },
      { type: "trc20", from: B, to: A, amount: "5000000000", contract: OTHER_TOKEN },
      { type: "trx", from: A, to: B, amount: 1 },
      { type: "trc10", from: B, to: A, amount: 1_000_000, tokenId: "1002000" },
    ]);
    await t.bed.receiver.waitForCount("/m-assets-all", 5);
    await t.bed.receiver.waitForCount("/m-assets", 2);
    expect(rolesByTx("/m-assets")).toEqual({ [tx[1]!]: ["to"], [tx[3]!]: ["from"] });
    expect(await t.events(sub)).toHaveLength(2);
    expect(Object.keys(rolesByTx("/m-assets-all")).sort()).toEqual([...tx].sort());
  });

  test("directions: incoming keeps the role `to`, outgoing the role `from`; a self-transfer lists only the role that passed", async () => {
    const [A, B] = [fresh(), fresh()];
    const incoming = await watching("/m-in", A, { match: { directions: { items: ["incoming"] } } });
    const outgoing = await watching("/m-out", A, { match: { directions: { items: ["outgoing"] } } });
    const both = await watching("/m-both", A);
    const tx = await block([
      { type: "trc20", from: A, to: A, amount: "7", contract: USDT },
      { type: "trx", from: A, to: B, amount: 2 },
      { type: "trx", from: B, to: A, amount: 3 },
    ]);
    await t.bed.receiver.waitForCount("/m-both", 3);
    await t.bed.receiver.waitForCount("/m-in", 2);
    await t.bed.receiver.waitForCount("/m-out", 2);
    expect(rolesByTx("/m-in")).toEqual({ [tx[0]!]: ["to"], [tx[2]!]: ["to"] });
    expect(rolesByTx("/m-out")).toEqual({ [tx[0]!]: ["from"], [tx[1]!]: ["from"] });
    expect(rolesByTx("/m-both")).toEqual({ [tx[0]!]: ["from", "to"], [tx[1]!]: ["from"], [tx[2]!]: ["to"] });
    for (const s of [incoming, outgoing]) expect(await t.events(s)).toHaveLength(2);
    expect(await t.events(both)).toHaveLength(3);
  });

  test("zero-value transfers (address poisoning) make no event by default, and do with includeZeroValue", async () => {
    const [A, B] = [fresh(), fresh()];
    const byDefault = await watching("/m-zero-default", A);
    await watching("/m-zero-on", A, { match: { includeZeroValue: true } });
    const tx = await block([
      { type: "trc20", from: B, to: A, amount: "0", contract: USDT },
      { type: "trc20", from: A, to: B, amount: "0", contract: OTHER_TOKEN },
      { type: "trc20", from: B, to: A, amount: "1", contract: USDT },
    ]);
    await t.bed.receiver.waitForCount("/m-zero-on", 3);
    expect(Object.keys(rolesByTx("/m-zero-on")).sort()).toEqual([...tx].sort());
    expect(payloads("/m-zero-on").filter((p) => p.data.amount === "0")).toHaveLength(2);
    await t.bed.receiver.waitForCount("/m-zero-default", 1);
    expect(rolesByTx("/m-zero-default")).toEqual({ [tx[2]!]: ["to"] });
    expect(await t.events(byDefault)).toHaveLength(1);
  });

  test("the final kinds obey the same conditions: a transfer below minAmount is neither confirmed nor failed", async () => {
    const [A, B] = [fresh(), fresh()];
    const kinds = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];
    const sub = await watching("/m-final", A, { events: kinds, match: { assets: { items: [{ standard: "TRC20", contract: USDT, minAmount: "100" }] } } });
    const b = await blockWith(t.sims[CHAIN]!, [
      { type: "trc20", from: B, to: A, amount: "99", contract: USDT },
      { type: "trc20", from: B, to: A, amount: "100", contract: USDT },
      { type: "trc20", from: B, to: A, amount: "99", contract: USDT, result: "REVERT" },
      { type: "trc20", from: B, to: A, amount: "500", contract: USDT, result: "REVERT" },
    ]);
    t.sims[CHAIN]!.produce(LAG);
    await t.matcher!.waitForSolidified(CHAIN, b.number);
    await t.bed.receiver.waitForCount("/m-final", 3);
    expect(rolesByTx("/m-final")).toEqual({ [b.txIds[1]!]: ["to"] });
    expect(rolesByTx("/m-final", "wallet.transfer.confirmed")).toEqual({ [b.txIds[1]!]: ["to"] });
    expect(rolesByTx("/m-final", "wallet.transfer.failed")).toEqual({ [b.txIds[3]!]: ["to"] });
    expect(await t.events(sub)).toHaveLength(3);
  });

  test("a change of match reaches the matcher before the response; PUT without match resets it to the default", async () => {
    const [A, B] = [fresh(), fresh()];
    const sub = await watching("/m-change", A);
    const put = (match?: MatchConditionsInit) =>
      t.bed.subscriptions.updateSubscription({
        keyId: sub.keyId,
        id: sub.subscriptionId,
        destination: { type: "https", url: t.bed.receiver.url("/m-change") },
        events: ["wallet.transfer.broadcasted"],
        status: "enabled",
        description: "",
        match,
      });

    // Outgoing only: the very next block (produced right after the answer) already obeys it.
    const changed = await put({ directions: { items: ["outgoing"] } });
    expect(changed.subscription!.match!.directions!.items).toEqual(["outgoing"]);
    const first = await block([
      { type: "trx", from: B, to: A, amount: 10 },
      { type: "trx", from: A, to: B, amount: 11 },
    ]);
    await t.bed.receiver.waitForCount("/m-change", 1);

    // PUT without match: back to both directions (and zero value off), again before the next block.
    const reset = await put();
    expect(reset.subscription!.match!.directions!.items).toEqual(["incoming", "outgoing"]);
    expect(reset.subscription!.match!.assets).toBeUndefined();
    const second = await block([
      { type: "trx", from: B, to: A, amount: 12 },
      { type: "trc20", from: B, to: A, amount: "0", contract: USDT },
    ]);
    await t.bed.receiver.waitForCount("/m-change", 2);
    expect(rolesByTx("/m-change")).toEqual({ [first[1]!]: ["from"], [second[0]!]: ["to"] });
    expect(await t.events(sub)).toHaveLength(2);
  });
});
