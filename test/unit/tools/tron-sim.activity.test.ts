// The simulator's account activity (issue 33): each kind on demand in java-tron's JSON (both forms) with the info
// fields it carries, checked against the recorded mainnet Stake 2.0 transactions and decoded with ethers' ABI
// (through tronweb); forks leave an approval out like a transfer; the generated mix follows the recorded blocks.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { evmWordToBase58, tronwebUtils } from "../../../common/tron-address.ts";
import type { TronBlock, TronLog, TronTransaction, TronTransactionInfo } from "../../../common/tron-node/types.ts";
import { startSimProcess } from "../../../bench/sim-process.ts";
import { activityTransaction, type ActivitySpec, type ResourceCode } from "../../../tools/tron-sim/activity.ts";
import { FIXTURES_DIR } from "../../../tools/tron-sim/chain.ts";
import { finishTransaction } from "../../../tools/tron-sim/envelope.ts";
import { toHexForm } from "../../../tools/tron-sim/forms.ts";
import { BlockGenerator, MAINNET_MIX, TRANSFERS_MIX, addressPool, mulberry32 } from "../../../tools/tron-sim/generate.ts";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";

const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const ABI = new tronwebUtils.Interface([
  "event Approval(address indexed owner, address indexed spender, uint256 value)",
  "event AddedBlackList(address _user)",
  "event RemovedBlackList(address _user)",
  "event DestroyedBlackFunds(address _blackListedUser, uint256 _balance)",
]);
const INDEXED_ABI = new tronwebUtils.Interface(["event DestroyedBlackFunds(address indexed _blackListedUser, uint256 _balance)"]);
const parse = (abi: typeof ABI, log: TronLog) => abi.parseLog({ topics: (log.topics ?? []).map((t) => `0x${t}`), data: `0x${log.data ?? ""}` })!;
const sha256 = (hex: string) => new Bun.CryptoHasher("sha256").update(Buffer.from(hex, "hex")).digest("hex");

let sim: TronSim;
beforeAll(() => {
  // No random transactions: a block holds what a test queued, and a fork adds none.
  sim = startTronSim({ blockMs: 0, txPerBlock: 0, poolSize: 20, recorded: false, solidLag: 3 });
});
afterAll(() => sim.stop());

const post = async <T>(path: string, body: unknown): Promise<{ body: T; status: number }> => {
  const res = await fetch(`${sim.url}${path}`, { method: "POST", body: JSON.stringify(body) });
  return { body: (await res.json()) as T, status: res.status };
};
interface Queued {
  txIds: string[];
  activities: { type: string; txId: string; logIndex?: number }[];
}

/** A block and its infos as the node serves them, in one form. */
async function served(num: number, visible: boolean) {
  const block = (await post<TronBlock>("/wallet/getblockbynum", { num, visible })).body;
  const infos = (await post<TronTransactionInfo[]>("/wallet/gettransactioninfobyblocknum", { num, visible })).body;
  const tx = (id: string) => block.transactions!.find((t) => t.txID === id)!;
  const info = (id: string) => infos.find((i) => i.id === id)!;
  return { block, infos, tx, info, value: (id: string) => tx(id).raw_data.contract[0]!.parameter.value };
}

test("the recorded Stake 2.0 transactions: built key for key by the simulator, their raw_data hashed to their txIDs", () => {
  const hex = JSON.parse(readFileSync(join(FIXTURES_DIR, "mainnet-block-61132092.getblockbynum.json"), "utf8")) as TronBlock;
  const visible = toHexForm(JSON.parse(readFileSync(join(FIXTURES_DIR, "mainnet-block-60836289.getblockbynum.visible.json"), "utf8")) as TronBlock);
  const types = { DelegateResourceContract: "delegate", UnDelegateResourceContract: "undelegate", FreezeBalanceV2Contract: "freeze" } as const;
  const rand = mulberry32(1);
  const seen: Record<string, number> = {};
  for (const tx of [...hex.transactions!, ...visible.transactions!]) {
    const c = tx.raw_data.contract[0]!;
    const type = types[c.type as keyof typeof types];
    if (!type) continue;
    seen[c.type] = (seen[c.type] ?? 0) + 1;
    const v = c.parameter.value;
    const spec: ActivitySpec = {
      type,
      owner: String(v.owner_address),
      receiver: v.receiver_address as string | undefined,
      amount: Number(v.balance ?? v.frozen_balance),
      resource: (v.resource ?? "BANDWIDTH") as ResourceCode,
      lock: v.lock === true,
      lockPeriod: Number(v.lock_period ?? 0),
      ...(c.Permission_id ? { permissionId: c.Permission_id } : {}),
    };
    const built = activityTransaction(spec, { number: 1, blockID: "0".repeat(64) }, 1_714_038_854_000, rand).tx;
    // Key order included: the simulator prints what java-tron printed.
    expect(JSON.stringify(built.raw_data.contract)).toBe(JSON.stringify(tx.raw_data.contract));
    const again = finishTransaction(tx.raw_data, "SUCCESS", rand);
    expect(again.raw_data_hex).toBe(tx.raw_data_hex!);
    expect(again.txID).toBe(tx.txID);
  }
  expect(seen).toEqual({ DelegateResourceContract: 26, UnDelegateResourceContract: 40, FreezeBalanceV2Contract: 2 });
});

test("each activity is served in both forms, with the info fields java-tron gives it", async () => {
  const [a, b, c, token, issuer] = sim.poolAddresses(5) as [string, string, string, string, string];
  const unlimited = (2n ** 256n - 1n).toString();
  const half = (2n ** 255n).toString();
  const specs = [
    { type: "approval", owner: a, spender: b, amount: unlimited },
    { type: "approval", owner: a, spender: b, amount: "0" },
    { type: "approval", owner: b, spender: a, amount: half, contract: token },
    { type: "approval", owner: a, spender: c, amount: "5", result: "REVERT" },
    {
      type: "permission",
      owner: a,
      permissions: {
        owner: { keys: [{ address: c }] },
        witness: { keys: [{ address: a }] },
        actives: [{ name: "ops", threshold: 2, operations: "7FFF1FC0033E0000000000000000000000000000000000000000000000000000", keys: [{ address: a }, { address: b, weight: 2 }] }],
      },
    },
    { type: "freeze", owner: a, amount: 20_558_956 },
    { type: "unfreeze", owner: a, amount: 3_000_000, resource: "BANDWIDTH", withdrawn: 7_000_000 },
    { type: "withdraw_unfrozen", owner: a, amount: 8_000_000 },
    { type: "cancel_unfreeze", owner: a, cancelled: { ENERGY: 10_000_000, BANDWIDTH: 2_000_000 }, withdrawn: 3_000_000 },
    { type: "delegate", owner: a, receiver: b, amount: 5_126_000_000, lock: true, lockPeriod: 28_800, permissionId: 3 },
    { type: "undelegate", owner: a, receiver: b, amount: 345_000_000, resource: "BANDWIDTH" },
    { type: "vote", owner: a, votes: [{ address: b, count: 10 }, { address: c, count: 3 }] },
    { type: "withdraw_rewards", owner: a, amount: 99_000_000 },
    { type: "blacklist_added", user: b, issuer },
    { type: "blacklist_removed", user: b, indexed: true },
    { type: "blacklist_funds_destroyed", user: c, amount: "123456789", issuer },
    { type: "blacklist_funds_destroyed", user: c, amount: "5", issuer, indexed: true },
  ];
  const { body, status } = await post<Queued>("/sim/activities", { activities: specs, produce: true });
  expect(status).toBe(200);
  expect(body.activities.map((x) => x.type)).toEqual(specs.map((s) => s.type));
  expect(body.activities.map((x) => x.logIndex)).toEqual([0, 0, 0, undefined, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0]);
  expect(body.txIds).toEqual(body.activities.map((x) => x.txId));
  const id = (i: number) => body.txIds[i]!;
  const num = sim.chain.byTxId(id(0))!.block.block_header.raw_data.number;
  const hexForm = await served(num, false);
  const vis = await served(num, true);
  expect(hexForm.block.transactions!.map((t) => t.txID)).toEqual(body.txIds);
  for (const t of hexForm.block.transactions!) expect(sha256(t.raw_data_hex!)).toBe(t.txID);

  // Approvals: approve(spender, amount) to the token, the Approval log decoded back; a failed call has no log.
  for (const [i, owner, spender, amount, contract] of [[0, a, b, unlimited, USDT], [1, a, b, "0", USDT], [2, b, a, half, token]] as const) {
    expect(vis.value(id(i))).toMatchObject({ owner_address: owner, contract_address: contract });
    expect(String(vis.value(id(i)).data).slice(0, 8)).toBe("095ea7b3");
    const log = vis.info(id(i)).log![0]!;
    expect(log.address).toBe(contract);
    expect(hexForm.info(id(i)).log![0]!.address).toBe(tronwebUtils.toHex(contract).slice(2));
    const ev = parse(ABI, log);
    expect(ev.name).toBe("Approval");
    expect([evmWordToBase58(ev.args[0]), evmWordToBase58(ev.args[1]), ev.args[2].toString()]).toEqual([owner, spender, amount]);
  }
  expect(vis.info(id(3))).toMatchObject({ result: "FAILED", receipt: { result: "REVERT" } });
  expect(vis.info(id(3)).log).toBeUndefined();

  // The permission update: java-tron's Permission JSON, addresses converted in the visible form, operations hex.
  expect(vis.value(id(4))).toEqual({
    owner: { keys: [{ address: c, weight: 1 }], threshold: 1, permission_name: "owner" },
    witness: { keys: [{ address: a, weight: 1 }], threshold: 1, id: 1, type: "Witness", permission_name: "witness" },
    owner_address: a,
    actives: [
      {
        operations: "7fff1fc0033e0000000000000000000000000000000000000000000000000000",
        keys: [{ address: a, weight: 1 }, { address: b, weight: 2 }],
        threshold: 2,
        id: 2,
        type: "Active",
        permission_name: "ops",
      },
    ],
  });
  expect((hexForm.value(id(4)).actives as { keys: { address: string }[] }[])[0]!.keys[1]!.address).toBe(tronwebUtils.toHex(b));
  expect(vis.info(id(4)).fee).toBe(100_268_000);

  // Stake 2.0, votes, rewards: the contracts (BANDWIDTH left out as proto3's default) and the amounts infos report.
  expect(vis.tx(id(5)).raw_data.contract[0]!.type).toBe("FreezeBalanceV2Contract");
  expect(vis.value(id(5))).toEqual({ resource: "ENERGY", frozen_balance: 20_558_956, owner_address: a });
  expect(vis.value(id(6))).toEqual({ owner_address: a, unfreeze_balance: 3_000_000 });
  expect(vis.info(id(6)).withdraw_expire_amount).toBe(7_000_000);
  expect(vis.tx(id(7)).raw_data.contract[0]!.type).toBe("WithdrawExpireUnfreezeContract");
  expect(vis.info(id(7)).withdraw_expire_amount).toBe(8_000_000);
  expect(vis.tx(id(8)).raw_data.contract[0]!.type).toBe("CancelAllUnfreezeV2Contract");
  expect(vis.info(id(8))).toMatchObject({
    withdraw_expire_amount: 3_000_000,
    cancel_unfreezeV2_amount: [{ key: "ENERGY", value: 10_000_000 }, { key: "TRON_POWER", value: 0 }, { key: "BANDWIDTH", value: 2_000_000 }],
  });
  expect(vis.tx(id(9)).raw_data.contract[0]).toMatchObject({ type: "DelegateResourceContract", Permission_id: 3 });
  expect(vis.value(id(9))).toEqual({ balance: 5_126_000_000, resource: "ENERGY", receiver_address: b, lock: true, owner_address: a, lock_period: 28_800 });
  expect(hexForm.value(id(9)).receiver_address).toBe(tronwebUtils.toHex(b));
  expect(vis.value(id(10))).toEqual({ balance: 345_000_000, receiver_address: b, owner_address: a });
  expect(vis.value(id(11))).toEqual({ owner_address: a, votes: [{ vote_address: b, vote_count: 10 }, { vote_address: c, vote_count: 3 }] });
  expect(vis.tx(id(12)).raw_data.contract[0]!.type).toBe("WithdrawBalanceContract");
  expect(vis.info(id(12)).withdraw_amount).toBe(99_000_000);
  for (let i = 5; i <= 12; i++) expect(vis.info(id(i))).toMatchObject({ fee: 268_000, receipt: { net_fee: 268_000 } });

  // Blacklist: the issuer's calls to USDT; the user in the data (Tether's events) or, asked for, indexed.
  expect(vis.value(id(13))).toMatchObject({ owner_address: issuer, contract_address: USDT });
  expect(String(vis.value(id(13)).data).slice(0, 8)).toBe("0ecb93c0");
  expect(vis.value(id(14)).owner_address).toBe(sim.poolAddresses(1)[0]!);
  expect(String(vis.value(id(15)).data).slice(0, 8)).toBe("f3bdc228");
  const added = vis.info(id(13)).log![0]!;
  expect(added.topics).toHaveLength(1);
  expect(parse(ABI, added)).toMatchObject({ name: "AddedBlackList" });
  expect(evmWordToBase58(parse(ABI, added).args[0])).toBe(b);
  const removed = vis.info(id(14)).log![0]!;
  expect(removed.topics).toHaveLength(2);
  expect(removed.topics![0]).toBe(tronwebUtils.id("RemovedBlackList(address)").slice(2));
  expect(removed.data).toBeUndefined();
  expect(evmWordToBase58(removed.topics![1]!)).toBe(b);
  const destroyed = parse(ABI, vis.info(id(15)).log![0]!);
  expect([destroyed.name, evmWordToBase58(destroyed.args[0]), destroyed.args[1].toString()]).toEqual(["DestroyedBlackFunds", c, "123456789"]);
  const destroyedIndexed = parse(INDEXED_ABI, vis.info(id(16)).log![0]!);
  expect([evmWordToBase58(destroyedIndexed.args[0]), destroyedIndexed.args[1].toString()]).toEqual([c, "5"]);
  expect(vis.info(id(16)).contractResult).toEqual([""]);

  // One transaction's info is the block's entry, in either form.
  for (const [form, visible] of [[hexForm, false], [vis, true]] as const) {
    for (const i of [0, 4, 8, 15]) {
      expect((await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value: id(i), visible })).body).toEqual(form.info(id(i)));
      expect((await post<TronTransaction>("/wallet/gettransactionbyid", { value: id(i), visible })).body).toEqual(form.tx(id(i)));
    }
  }
});

test("the solidity API serves an activity and its info once its block is solidified", async () => {
  const [a, b] = sim.poolAddresses(2) as [string, string];
  const { body } = await post<Queued>("/sim/activities", { activities: [{ type: "approval", owner: a, spender: b, amount: "7" }, { type: "withdraw_rewards", owner: b, amount: 5 }], produce: true });
  for (const txId of body.txIds) expect((await post("/walletsolidity/gettransactioninfobyid", { value: txId })).body).toEqual({});
  sim.produce(3);
  for (const visible of [false, true]) {
    for (const txId of body.txIds) {
      const full = (await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value: txId, visible })).body;
      expect((await post("/walletsolidity/gettransactioninfobyid", { value: txId, visible })).body).toEqual(full);
    }
    const num = sim.chain.byTxId(body.txIds[0]!)!.block.block_header.raw_data.number;
    const infos = (await post<TronTransactionInfo[]>("/walletsolidity/gettransactioninfobyblocknum", { num, visible })).body;
    expect(infos.find((i) => i.id === body.txIds[1])!.withdraw_amount).toBe(5);
  }
});

test("a fork leaves a broadcasted approval out like a transfer; a re-included activity keeps its info", async () => {
  const [a, b] = sim.poolAddresses(2) as [string, string];
  const approval = (await post<Queued>("/sim/activities", { activities: [{ type: "approval", owner: a, spender: b, amount: "1000" }] })).body.txIds[0]!;
  const [transfer] = sim.chain.enqueue([{ type: "trx", from: b, to: a, amount: 5 }]);
  const [old] = sim.produce(1);
  const height = old!.block.block_header.raw_data.number;
  expect((await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value: approval })).body.log).toHaveLength(1);

  const fork = (await post<{ removed: string[]; added: string[] }>("/sim/fork", { depth: 1, reinclude: [transfer] })).body;
  const replacing = (await post<TronBlock>("/wallet/getblockbynum", { num: height })).body;
  expect(replacing.blockID).toBe(fork.added[0]!);
  expect(replacing.transactions!.map((t) => t.txID)).toEqual([transfer!]);
  expect((await post("/wallet/gettransactioninfobyid", { value: approval })).body).toEqual({});
  expect((await post("/wallet/gettransactionbyid", { value: approval })).body).toEqual({});
  expect((await post<TronTransactionInfo[]>("/wallet/gettransactioninfobyblocknum", { num: height })).body.map((i) => i.id)).toEqual([transfer!]);
  expect((await post("/wallet/getblockbyid", { value: fork.removed[0] })).body).toEqual({});

  // Re-included (the default), an activity keeps its log and amounts in the replacing block.
  const again = (await post<Queued>("/sim/activities", {
    activities: [{ type: "approval", owner: b, spender: a, amount: "9" }, { type: "cancel_unfreeze", owner: b, amount: 4, resource: "BANDWIDTH" }],
    produce: true,
  })).body.txIds;
  const before = await Promise.all(again.map(async (value) => (await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value, visible: true })).body));
  const moved = (await post<{ added: string[] }>("/sim/fork", { depth: 1 })).body.added[0]!;
  for (const [i, value] of again.entries()) {
    const after = (await post<TronTransactionInfo>("/wallet/gettransactioninfobyid", { value, visible: true })).body;
    expect(sim.chain.byTxId(value)!.block.blockID).toBe(moved);
    expect(after).toEqual({ ...before[i]!, blockTimeStamp: after.blockTimeStamp });
  }
});

test("a spec without a field it needs is a 400 and queues nothing of its request", async () => {
  const [a, b] = sim.poolAddresses(2) as [string, string];
  const bad = await post<{ Error: string }>("/sim/activities", { activities: [{ type: "freeze", owner: a, amount: 1 }, { type: "approval", owner: a, amount: "1" }] });
  expect(bad.status).toBe(400);
  expect(bad.body.Error).toContain("spender");
  expect((await post<{ Error: string }>("/sim/activities", { activities: [{ type: "mint", owner: a }] })).status).toBe(400);
  expect((await post<{ Error: string }>("/sim/activities", { activities: [{ type: "delegate", owner: a, receiver: b, amount: 1, resource: "CPU" }] })).status).toBe(400);
  const [block] = sim.produce(1);
  expect(block!.block.transactions).toBeUndefined();
});

/** Counts of a generated sample by what each transaction is. */
function classify(txs: TronTransaction[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const tx of txs) {
    const c = tx.raw_data.contract[0]!;
    const key = c.type === "TriggerSmartContract" ? `call:${String(c.parameter.value.data).slice(0, 8)}` : c.type;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function sample(mix: typeof MAINNET_MIX, blocks: number): { txs: TronTransaction[]; generator: BlockGenerator } {
  const generator = new BlockGenerator({ pool: addressPool(500, 9), mix, seed: 11 });
  const txs: TronTransaction[] = [];
  for (let i = 0; i < blocks; i++) txs.push(...generator.block({ number: 100 + i, blockID: "0".repeat(64) }, 1_800_000_000_000 + i * 3_000, 300).transactions!);
  return { txs, generator };
}

test("the generated mainnet mix follows the recorded blocks' proportions, with a few approvals per block", () => {
  const { txs, generator } = sample(MAINNET_MIX, 20);
  const n = txs.length;
  const c = classify(txs);
  const share = (...keys: string[]) => keys.reduce((s, k) => s + (c[k] ?? 0), 0) / n;
  const calls = share("call:a9059cbb", "call:23b872dd", "call:095ea7b3");
  // The recorded blocks together: 34 % TRX, 43 % calls, 7.5 % TRC-10, 15.5 % other (56 % of it UnDelegate, 36 % Delegate).
  expect(share("TransferContract")).toBeCloseTo(0.34, 1);
  expect(calls).toBeCloseTo(0.43, 1);
  expect(share("TransferAssetContract")).toBeGreaterThan(0.055);
  expect(share("TransferAssetContract")).toBeLessThan(0.095);
  const other = share("DelegateResourceContract", "UnDelegateResourceContract", "FreezeBalanceV2Contract", "AccountCreateContract", "UnfreezeBalanceV2Contract", "WithdrawExpireUnfreezeContract", "VoteWitnessContract", "WithdrawBalanceContract", "CancelAllUnfreezeV2Contract", "AccountPermissionUpdateContract");
  expect(other).toBeGreaterThan(0.13);
  expect(other).toBeLessThan(0.18);
  expect(share("UnDelegateResourceContract") / other).toBeCloseTo(0.56, 1);
  expect(share("DelegateResourceContract") / other).toBeCloseTo(0.36, 1);
  expect(c.FreezeBalanceV2Contract).toBeGreaterThan(0);
  expect(c.AccountCreateContract).toBeGreaterThan(0);
  // approve() is 2 % of the calls: a few per 300-transaction block.
  const approvals = c["call:095ea7b3"]! / 20;
  expect(approvals).toBeGreaterThan(1);
  expect(approvals).toBeLessThan(5);
  // What the infos of generated activity need is kept by txID: a log for each approval, an amount for each withdrawal.
  for (const tx of txs) {
    const c0 = tx.raw_data.contract[0]!;
    const extra = generator.infoExtras.get(tx.txID);
    if (String(c0.parameter.value.data ?? "").startsWith("095ea7b3")) {
      const ev = parse(ABI, { ...extra!.log![0]!, address: "" });
      expect(`41${ev.args[0].slice(2).toLowerCase()}`).toBe(String(c0.parameter.value.owner_address));
    }
    if (c0.type === "WithdrawBalanceContract") expect(extra!.withdraw_amount).toBeGreaterThan(0);
    if (c0.type === "WithdrawExpireUnfreezeContract") expect(extra!.withdraw_expire_amount).toBeGreaterThan(0);
    if (c0.type === "CancelAllUnfreezeV2Contract") expect(extra!.cancel_unfreezeV2_amount).toHaveLength(3);
  }
});

test("the transfers mix has transfers only", () => {
  const { txs, generator } = sample(TRANSFERS_MIX, 5);
  expect(Object.keys(classify(txs)).sort()).toEqual(["TransferAssetContract", "TransferContract", "call:23b872dd", "call:a9059cbb"]);
  expect(generator.infoExtras.size).toBe(0);
});

test("--mix picks the generated mix on the command line", async () => {
  const { url, proc } = await startSimProcess(["--port", "0", "--block-ms", "0", "--tx", "200", "--no-recorded", "--backlog", "2", "--mix", "transfers"]);
  try {
    const block = (await (await fetch(`${url}/wallet/getnowblock`)).json()) as TronBlock;
    expect(block.transactions).toHaveLength(200);
    expect(new Set(block.transactions!.map((t) => t.raw_data.contract[0]!.type))).toEqual(new Set(["TransferContract", "TriggerSmartContract", "TransferAssetContract"]));
  } finally {
    proc.kill();
    await proc.exited;
  }
  const bad = Bun.spawn([process.execPath, join(import.meta.dir, "../../../tools/tron-sim/main.ts"), "--port", "0", "--mix", "everything"], { stderr: "pipe", stdout: "ignore" });
  expect(await bad.exited).toBe(2);
  expect(await new Response(bad.stderr).text()).toContain("--mix must be one of mainnet, transfers");
});
