// Account activity out of a java-tron block and its transaction infos (docs/CONTRACT.md "Account activity"), for
// successful transactions only: the permission and resource contracts (logIndex -1), and the approval and blacklist
// logs of contract calls (logIndex = the log's index). Both JSON forms (visible=false hex, visible=true base58).
// It runs beside decodeBlock on every block, so it stays cheap on the usual mix (mostly transfers): one pass, the
// contract type compared first, nothing allocated for a transaction that is no activity, and a log ABI-decoded only
// when its topic0 is one of the events below.
import type { TronBlock, TronLog, TronTransaction, TronTransactionInfo } from "../../common/tron-node/types.ts";
import { SUCCESS, feeOf, outcomeOf, transactionInfoSucceeded } from "../decode.ts";
import { APPROVAL_TOPIC, decodeApprovalLog } from "./approval.ts";
import { BLACKLIST_EVENTS, decodeBlacklistLog } from "./blacklist.ts";
import { PERMISSION_CONTRACT, isResourceContract } from "./contracts.ts";
import { decodePermissionUpdate } from "./permission.ts";
import { decodeResourceMove } from "./resource.ts";
import type { ActivityDecodeOptions, ActivityFields, DecodedActivity } from "./types.ts";

type LogDecoder = (log: TronLog, opts: ActivityDecodeOptions) => ActivityFields | null;

const LOG_DECODERS: readonly [string, LogDecoder][] = [
  [APPROVAL_TOPIC, decodeApprovalLog],
  ...[...BLACKLIST_EVENTS].map(([topic, event]): [string, LogDecoder] => [topic, (log, opts) => decodeBlacklistLog(log, event, opts)]),
];

// topic0 as java-tron prints it (lowercase, no 0x), and upper-case as some encoders do. A log is checked against
// each with `===`, which stops at the first differing digit: cheaper than a Map lookup, which hashes all 64 digits,
// for the ~100 logs of a block that are none of these.
const TOPIC_DECODERS: readonly [string, LogDecoder][] = LOG_DECODERS.flatMap(([topic, decode]): [string, LogDecoder][] => [
  [topic, decode],
  [topic.toUpperCase(), decode],
]);

/** The decoder of a log's topic0, if it is one of the activity events. */
function logDecoder(topic0: string | undefined): LogDecoder | undefined {
  if (topic0 === undefined) return undefined;
  for (let i = 0; i < TOPIC_DECODERS.length; i++) if (topic0 === TOPIC_DECODERS[i]![0]) return TOPIC_DECODERS[i]![1];
  return topic0.length === 66 && topic0.startsWith("0x") ? logDecoder(topic0.slice(2)) : undefined;
}

/** The info of the i-th transaction: infos come in block order, so the same index, else a search by id. */
function infoAt(infos: TronTransactionInfo[] | null, i: number, tx: TronTransaction): TronTransactionInfo | undefined {
  if (infos === null) return undefined;
  const info = infos[i];
  return info?.id === tx.txID ? info : infos.find((x) => x.id === tx.txID);
}

function succeeded(tx: TronTransaction, info: TronTransactionInfo | undefined): boolean {
  return outcomeOf(tx, info) === SUCCESS && (info === undefined || transactionInfoSucceeded(info));
}

function activity(tx: TronTransaction, logIndex: number, fields: ActivityFields, info: TronTransactionInfo | undefined): DecodedActivity {
  // Spelled out rather than spread: a spread costs more than the rest of a resource contract's decoding.
  return { family: fields.family, txId: tx.txID, logIndex, parties: fields.parties, detail: fields.detail, fee: feeOf(info), result: SUCCESS };
}

/**
 * Every activity of a block's successful transactions, in block order (per transaction: its contract, or its logs in
 * order). `infos` are the block's transaction infos, or null when it needs none (then fees are "0").
 */
export function decodeActivities(block: TronBlock, infos: TronTransactionInfo[] | null, opts: ActivityDecodeOptions): DecodedActivity[] {
  const out: DecodedActivity[] = [];
  const txs = block.transactions;
  if (!txs) return out;
  for (let i = 0; i < txs.length; i++) {
    const tx = txs[i]!;
    const contract = tx.raw_data.contract[0];
    if (contract === undefined) continue;
    const type = contract.type;
    if (type === "TriggerSmartContract" || type === "CreateSmartContract") {
      const info = infoAt(infos, i, tx);
      const logs = info?.log;
      if (logs === undefined || logs.length === 0) continue;
      for (let j = 0; j < logs.length; j++) {
        const log = logs[j]!;
        const decode = logDecoder(log.topics?.[0]);
        if (decode === undefined || !succeeded(tx, info)) continue;
        const fields = decode(log, opts);
        if (fields !== null) out.push(activity(tx, j, fields, info));
      }
    } else if (type === PERMISSION_CONTRACT || isResourceContract(type)) {
      const info = infoAt(infos, i, tx);
      if (!succeeded(tx, info)) continue;
      const v = contract.parameter.value;
      const fields = type === PERMISSION_CONTRACT ? decodePermissionUpdate(v) : decodeResourceMove(type, v, info);
      if (fields !== null) out.push(activity(tx, -1, fields, info));
    }
  }
  return out;
}
