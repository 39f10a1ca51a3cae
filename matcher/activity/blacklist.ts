// wallet.blacklist.*: a stablecoin issuer freezing an address, from the contracts in BLACKLIST_CONTRACTS only (anyone
// can emit these events). USDT on TRON declares `AddedBlackList(address _user)`, `RemovedBlackList(address _user)`
// and `DestroyedBlackFunds(address _blackListedUser, uint _balance)` with nothing indexed; other issuers index the
// user. topic0 is the same either way, and eventWords reads the topics then the data, so both decode.
import type { TronLog } from "../../common/tron-node/types.ts";
import { logAddress } from "../decode.ts";
import { addressArg, amountArg, eventTopic, eventWords, tokenAsset } from "./event-log.ts";
import type { ActivityDecodeOptions, ActivityFields } from "./types.ts";

interface BlacklistEvent {
  type: "added" | "removed" | "funds_destroyed";
  /** How many arguments: the user (address), then for funds_destroyed the balance (uint256). */
  args: 1 | 2;
}

/** topic0 → the event it announces. */
export const BLACKLIST_EVENTS: ReadonlyMap<string, BlacklistEvent> = new Map([
  [eventTopic("AddedBlackList(address)"), { type: "added", args: 1 }],
  [eventTopic("RemovedBlackList(address)"), { type: "removed", args: 1 }],
  [eventTopic("DestroyedBlackFunds(address,uint256)"), { type: "funds_destroyed", args: 2 }],
]);

export function decodeBlacklistLog(log: TronLog, event: BlacklistEvent, opts: ActivityDecodeOptions): ActivityFields | null {
  const contract = logAddress(log.address);
  if (contract === null || !opts.blacklistContracts.has(contract)) return null;
  const words = eventWords(log, event.args);
  const address = words === null ? null : addressArg(words[0]!);
  if (words === null || address === null) return null;
  const amount = event.args === 2 ? amountArg(words[1]!) : undefined;
  if (amount === null) return null;
  return {
    family: "blacklist",
    parties: [{ address, role: "blacklisted" }],
    detail: { case: "blacklist", value: { type: event.type, address, amount, asset: tokenAsset(opts.chainId, contract) } },
  };
}
