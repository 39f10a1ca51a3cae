// What the decoder reads, end to end through the simulator (matcher → deliverer → verifying HTTPS receiver): internal
// TRX and TRC-10 transfers, memo and fee in the payload, the real failed USDT transfers (REVERT, OUT_OF_ENERGY) and
// the real testnet internal-transaction infos placed in a block. The solidified head trails by 2 blocks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { blockWith, startMatcherBed, type MatcherBed } from "../../support/matcher-bed.ts";

const fresh = () => hexToBase58(`41${randomBytes(20).toString("hex")}`);
const CHAIN = "tron:mainnet" as const;
const LAG = 2;
const ALL = ["wallet.transfer.broadcasted", "wallet.transfer.confirmed", "wallet.transfer.failed"];

type Payload = { id: string; kind: string; data: Record<string, unknown> & { txId: string } };

let t: MatcherBed;
beforeAll(async () => {
  t = await startMatcherBed({ chains: [CHAIN], sim: { solidLag: LAG } });
});
afterAll(async () => {
  await t?.stop();
});

const payloads = (path: string) => t.bed.receiver.deliveries(path).map((d) => JSON.parse(d.body) as Payload);

/** Produces enough blocks for `number` to be solidified and waits for the solidified stream to pass it. */
async function solidify(number: number): Promise<void> {
  t.sims[CHAIN]!.produce(LAG);
  await t.matcher!.waitForSolidified(CHAIN, number);
}

test("internal TRX and TRC-10 transfers: broadcasted with internalIndex, memo and fee, then confirmed; zero-value and rejected entries make nothing", async () => {
  const sim = t.sims[CHAIN]!;
  const [payout, user, other] = [fresh(), fresh(), fresh()];
  const sub = await t.subscribe("/content-internal", { events: ALL });
  await t.watch(sub, CHAIN, [user]);
  // The paying contract: its zero-value call to itself (entry 0) and the rolled-back entry 2 are no transfers.
  const contractSide = await t.subscribe("/content-payer");
  await t.watch(contractSide, CHAIN, [payout]);
  const block = await blockWith(sim, [
    { type: "internal", from: other, to: user, amount: 700000, contract: payout, memo: "payout #7 ✓" },
    { type: "internal", from: other, to: user, amount: 42, tokenId: "1002000", contract: payout },
    { type: "trx", from: other, to: user, amount: 3, memoHex: "ff00fe" },
  ]);
  const [trxTx, trc10Tx, memoTx] = block.txIds as [string, string, string];
  await t.matcher!.waitForBlock(CHAIN, block.number);
  await t.bed.receiver.waitForCount("/content-internal", 3);
  await Bun.sleep(300);
  const broadcasted = payloads("/content-internal").filter((p) => p.kind === "wallet.transfer.broadcasted");
  expect(broadcasted).toHaveLength(3);
  const byTx = (tx: string) => broadcasted.find((p) => p.data.txId === tx)!.data;
  expect(byTx(trxTx)).toMatchObject({
    blockNumber: block.number,
    logIndex: -1,
    internalIndex: 1,
    from: payout,
    to: user,
    amount: "700000",
    asset: { type: "native", standard: "TRX", contract: null, tokenId: null, symbol: "TRX", decimals: 6 },
    fee: "13735500",
    memo: "payout #7 ✓",
    matchedAddresses: [{ chainId: CHAIN, address: user, role: "to" }],
  });
  expect(byTx(trc10Tx)).toMatchObject({
    internalIndex: 1,
    from: payout,
    amount: "42",
    asset: { type: "fungible", standard: "TRC10", tokenId: "1002000" },
    memo: null,
  });
  expect(byTx(memoTx)).toMatchObject({ internalIndex: -1, amount: "3", fee: "268000", memo: "0xff00fe" });
  await t.bed.receiver.waitForCount("/content-payer", 2);
  expect(payloads("/content-payer").map((p) => [p.data.txId, p.data.internalIndex, p.data.matchedAddresses]).sort()).toEqual(
    [
      [trxTx, 1, [{ chainId: CHAIN, address: payout, role: "from" }]],
      [trc10Tx, 1, [{ chainId: CHAIN, address: payout, role: "from" }]],
    ].sort(),
  );

  await solidify(block.number);
  await t.bed.receiver.waitForCount("/content-internal", 6);
  await Bun.sleep(300);
  const confirmed = payloads("/content-internal").filter((p) => p.kind === "wallet.transfer.confirmed");
  expect(confirmed.map((p) => `${p.data.txId}:${p.data.internalIndex}`).sort()).toEqual(
    [`${trxTx}:1`, `${trc10Tx}:1`, `${memoTx}:-1`].sort(),
  );
  expect(confirmed.find((p) => p.data.txId === trxTx)!.data).toMatchObject({ memo: "payout #7 ✓", fee: "13735500", internalIndex: 1 });
  expect(payloads("/content-internal")).toHaveLength(6);
  for (const d of t.bed.receiver.deliveries("/content-internal")) expect(d.verified).toBe(true);
});

test("the recorded failed USDT transfers: 4 × REVERT and 1 × OUT_OF_ENERGY failed with their call data and fees, the one that went through broadcasted and confirmed", async () => {
  const sim = t.sims[CHAIN]!;
  const recipient = "TXCvUayMx6AuBvS7qBa79ZAfhrwSA7vTjG";
  const sub = await t.subscribe("/content-failed", { events: ALL });
  await t.watch(sub, CHAIN, [recipient]);
  const res = await fetch(`${sim.url}/sim/place`, { method: "POST", body: JSON.stringify({ fixture: "failed-usdt", produce: true }) });
  expect(res.status).toBe(200);
  const number = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForBlock(CHAIN, number);
  await t.bed.receiver.waitForCount("/content-failed", 1);
  await Bun.sleep(300);
  // Only the successful call is broadcasted.
  expect(payloads("/content-failed").map((p) => [p.kind, p.data.txId.slice(0, 8)])).toEqual([["wallet.transfer.broadcasted", "b9ddf014"]]);

  await solidify(number);
  await t.bed.receiver.waitForCount("/content-failed", 7);
  await Bun.sleep(300);
  const got = payloads("/content-failed");
  expect(got).toHaveLength(7);
  const failed = got.filter((p) => p.kind === "wallet.transfer.failed");
  expect(failed.map((p) => [p.data.txId.slice(0, 8), p.data.reason, p.data.fee]).sort()).toEqual([
    ["43d14257", "OUT_OF_ENERGY", "999600"],
    ["6f73eebe", "REVERT", "2086320"],
    ["a86bee3d", "REVERT", "1741320"],
    ["d1f87f7e", "REVERT", "2086320"],
    ["f4cfa0b9", "REVERT", "2086320"],
  ]);
  for (const f of failed) {
    expect(f.data).toMatchObject({
      blockNumber: number,
      logIndex: -1,
      internalIndex: -1,
      from: "TPcUx2iwjomVzmX3CHDDYmnEPJFTVeyqqS",
      to: recipient,
      amount: "6868769",
      asset: { standard: "TRC20", contract: "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", symbol: "USDT", decimals: 6 },
      memo: null,
      matchedAddresses: [{ chainId: CHAIN, address: recipient, role: "to" }],
    });
    expect(f.data.solidifiedBlockNumber).toBeGreaterThanOrEqual(number);
  }
  const confirmed = got.find((p) => p.kind === "wallet.transfer.confirmed")!;
  expect(confirmed.data).toMatchObject({ logIndex: 0, amount: "6868769", fee: "13395900" });
  expect(confirmed.data.txId.startsWith("b9ddf014")).toBe(true);
});

test("the recorded testnet internal transfers: each delivered at its internalIndex with its fee", async () => {
  const sim = t.sims[CHAIN]!;
  const sub = await t.subscribe("/content-testnet");
  await t.watch(sub, CHAIN, ["TFHnPDjYj2i8bUnWozc8ZxHNMMQfSRBJZR", "TXtpCUXaLmjMxCXy6krUvW5hgaocd9eezd"]);
  await fetch(`${sim.url}/sim/place`, { method: "POST", body: JSON.stringify({ fixture: "internal", produce: true }) });
  const number = sim.chain.head().block.block_header.raw_data.number;
  await t.matcher!.waitForBlock(CHAIN, number);
  await t.bed.receiver.waitForCount("/content-testnet", 3);
  await Bun.sleep(300);
  const got = payloads("/content-testnet");
  expect(got.map((p) => [p.kind, p.data.txId.slice(0, 8), p.data.internalIndex, p.data.amount, p.data.fee, p.data.to]).sort()).toEqual([
    ["wallet.transfer.broadcasted", "4ef51a57", 2, "2457950000", "376380", "TXtpCUXaLmjMxCXy6krUvW5hgaocd9eezd"],
    ["wallet.transfer.broadcasted", "80e07e3f", 1, "550000", "433850", "TFHnPDjYj2i8bUnWozc8ZxHNMMQfSRBJZR"],
    ["wallet.transfer.broadcasted", "98d0f414", 1, "700000", "433850", "TFHnPDjYj2i8bUnWozc8ZxHNMMQfSRBJZR"],
  ]);
  for (const p of got) expect(p.data).toMatchObject({ blockNumber: number, logIndex: -1, from: "TNt1Mr2Yau3C8Z2fyX1pwxKj3KpjuRmYkF" });
});
