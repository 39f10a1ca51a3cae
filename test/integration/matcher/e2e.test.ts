// End to end through the simulator: a transfer touching a watched address in a new block becomes exactly one
// signed delivery with the contract's payload; a disabled subscription, a subscription on another chain, one
// without the kind, and a failed transaction make nothing. Subscriptions, watches and event reads go through the
// public API with the generated client, as a customer's would.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { PublicApi } from "../../support/public-api.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const A = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";
const B = "TYCrwuKFKhLsbuSY5Jpwd8LYdq6QU8d9J5";
const C = "TKRQdrYXgrFSBx6jjfqRv6vFdsDZA9iG4q";
const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const UNKNOWN_TOKEN = "TFkyVCGCU1AQYpTyZgtZ2bFJX8EszoTx96";

let t: MatcherBed;
let api: PublicApi;

beforeAll(async () => {
  t = await startMatcherBed({ chains: ["tron:mainnet", "tron:nile"], publicApi: true });
  api = t.api!;
});
afterAll(async () => {
  await t?.stop();
});

type Payload = { id: string; kind: string; date: string; subscriptionId: string; data: Record<string, unknown> };

describe("matcher end to end", () => {
  test("watched addresses in a new block → one signed delivery per transfer, payload as the contract says", async () => {
    const main = t.sims["tron:mainnet"]!;
    const sub = await api.subscribe("/main");
    await api.watch(sub, "tron:mainnet", [A]);
    // Negative subscriptions watching the same address.
    const disabled = await api.subscribe("/disabled", { status: "disabled" });
    await api.watch(disabled, "tron:mainnet", [A]);
    const otherChain = await api.subscribe("/nile");
    await api.watch(otherChain, "tron:nile", [A]);
    const noKind = await api.subscribe("/ping-only", { events: ["service.ping"] });
    await api.watch(noKind, "tron:mainnet", [A]);
    const keyWithoutMainnet = await api.subscribe("/nile-key", { chains: ["tron:nile"] });
    await api.watch(keyWithoutMainnet, "tron:nile", [A]);

    const block = await blockWith(main, [
      { type: "trx", from: A, to: B, amount: 1_500_000 },
      { type: "trc20", from: C, to: A, amount: "2384950100", contract: USDT },
      { type: "trc10", from: B, to: A, amount: 42, tokenId: "1002000" },
      { type: "trc20", from: A, to: A, amount: "7", contract: UNKNOWN_TOKEN },
      // A reverted USDT transfer to A: no event.
      { type: "trc20", from: C, to: A, amount: "99", contract: USDT, result: "REVERT" },
      // Not touching A: no event.
      { type: "trx", from: B, to: C, amount: 5 },
    ]);
    await t.matcher!.waitForBlock("tron:mainnet", block.number);
    await t.bed.receiver.waitForCount("/main", 4);

    const deliveries = t.bed.receiver.deliveries("/main");
    expect(deliveries).toHaveLength(4);
    for (const d of deliveries) expect(d.verified).toBe(true);
    const payloads = deliveries.map((d) => JSON.parse(d.body) as Payload);
    const byTx = new Map(payloads.map((p) => [p.data.txId as string, p]));
    for (const p of payloads) {
      expect(p.kind).toBe("wallet.transfer.broadcasted");
      expect(p.subscriptionId).toBe(sub.subscriptionId);
      expect(p.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(deliveries.find((d) => d.body.includes(p.id))!.headers["webhook-id"]).toBe(p.id);
      expect(p.data.chainId).toBe("tron:mainnet");
      expect(p.data.blockNumber).toBe(block.number);
      expect(p.data.blockHash).toBe(block.blockId);
      expect(p.data.blockTimestamp).toBe(block.timestamp);
    }

    expect(byTx.get(block.txIds[0]!)!.data).toEqual({
      chainId: "tron:mainnet",
      blockNumber: block.number,
      blockHash: block.blockId,
      blockTimestamp: block.timestamp,
      txId: block.txIds[0],
      logIndex: -1,
      internalIndex: -1,
      from: A,
      to: B,
      amount: "1500000",
      asset: { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
      // The simulator charges a transfer 268,000 sun of bandwidth (its synthesized transaction info).
      fee: "268000",
      memo: null,
      matchedAddresses: [{ chainId: "tron:mainnet", address: A, role: "from" }],
      backfill: null,
    });
    const usdt = byTx.get(block.txIds[1]!)!.data;
    expect(usdt).toMatchObject({ logIndex: 0, from: C, to: A, amount: "2384950100" });
    expect(usdt.asset).toEqual({ type: "fungible", standard: "TRC20", contract: USDT, tokenId: null, symbol: "USDT", decimals: 6 });
    expect(usdt.matchedAddresses).toEqual([{ chainId: "tron:mainnet", address: A, role: "to" }]);
    const trc10 = byTx.get(block.txIds[2]!)!.data;
    expect(trc10).toMatchObject({ logIndex: -1, from: B, to: A, amount: "42" });
    expect(trc10.asset).toEqual({ type: "fungible", standard: "TRC10", contract: null, tokenId: "1002000", symbol: null, decimals: null });
    const self = byTx.get(block.txIds[3]!)!.data;
    expect(self.asset).toEqual({ type: "fungible", standard: "TRC20", contract: UNKNOWN_TOKEN, tokenId: null, symbol: null, decimals: null });
    expect(self.matchedAddresses).toEqual([
      { chainId: "tron:mainnet", address: A, role: "from" },
      { chainId: "tron:mainnet", address: A, role: "to" },
    ]);
    expect(byTx.has(block.txIds[4]!)).toBe(false);

    // The block is checkpointed, so its events were accepted: the negative subscriptions have none.
    for (const s of [disabled, otherChain, noKind, keyWithoutMainnet]) expect(await api.events(s)).toHaveLength(0);

    // Later blocks without A make nothing more.
    const later = await blockWith(main, [{ type: "trx", from: B, to: C, amount: 9 }]);
    await t.matcher!.waitForBlock("tron:mainnet", later.number);
    expect(await api.events(sub)).toHaveLength(4);
    expect(t.bed.receiver.count("/disabled") + t.bed.receiver.count("/nile") + t.bed.receiver.count("/ping-only")).toBe(0);
  });

  test("the same address on another chain is another watch: a nile transfer reaches only the nile subscription", async () => {
    const nile = t.sims["tron:nile"]!;
    const mainSub = await api.subscribe("/main-only");
    await api.watch(mainSub, "tron:mainnet", [B]);
    const nileSub = await api.subscribe("/nile-only");
    await api.watch(nileSub, "tron:nile", [B]);
    const block = await blockWith(nile, [{ type: "trc20", from: C, to: B, amount: "5", contract: USDT }]);
    await t.matcher!.waitForBlock("tron:nile", block.number);
    await t.bed.receiver.waitForCount("/nile-only", 1);
    const [d] = t.bed.receiver.deliveries("/nile-only");
    expect(d!.verified).toBe(true);
    const p = JSON.parse(d!.body) as Payload;
    expect(p.data.chainId).toBe("tron:nile");
    // The mainnet USDT contract means nothing on nile.
    expect(p.data.asset).toEqual({ type: "fungible", standard: "TRC20", contract: USDT, tokenId: null, symbol: null, decimals: null });
    expect(p.data.matchedAddresses).toEqual([{ chainId: "tron:nile", address: B, role: "to" }]);
    expect(await api.events(mainSub)).toHaveLength(0);
  });

  test("a block re-read (the node answers it again after a restart) makes no second event", async () => {
    const main = t.sims["tron:mainnet"]!;
    const sub = await api.subscribe("/reread");
    await api.watch(sub, "tron:mainnet", [C]);
    const block = await blockWith(main, [{ type: "trx", from: C, to: B, amount: 3 }]);
    await t.matcher!.waitForBlock("tron:mainnet", block.number);
    expect(await api.events(sub)).toHaveLength(1);
    // Restart the matcher from an older checkpoint: it reads the block again.
    await t.matcher!.close();
    const { matcherCheckpoints } = await import("../../../matcher/schema.ts");
    const { openMatcherDatabase } = await import("../../../matcher/store.ts");
    const db = await openMatcherDatabase(t.bed.env.DATABASE_URL!);
    const { eq } = await import("drizzle-orm");
    await db.update(matcherCheckpoints).set({ blockNumber: block.number - 1, blockId: main.chain.byNumber(block.number - 1)!.block.blockID }).where(eq(matcherCheckpoints.chainId, "tron:mainnet"));
    await db.$client.close();
    const m = await t.startMatcher();
    const next = await blockWith(main, []);
    await m.waitForBlock("tron:mainnet", next.number);
    expect(await api.events(sub)).toHaveLength(1);
  });
});
