// What the /v1/subscriptions/:id/filters/addresses operations share. Shapes are checked here; every rule with its own
// error code (base58check, chains, limits, page tokens) is the registry's (registry/addresses.ts).
import { t } from "elysia";
import { ADDRESS_CHANGE_BUDGET_MS, writeRpcDeadline } from "../../../common/deadlines.ts";
import { CHAIN_CHOICES } from "../../../common/contract/index.ts";
import { InputObject } from "../../schemas.ts";

export const TAGS = ["address filters"];
export const PATH = "/v1/subscriptions/:id/filters/addresses";
/** A change of up to 10,000 addresses: the bulk budget, and the wait for a COMMIT in flight (common/deadlines.ts). */
export const CHANGE_OPTIONS = { timeoutMs: writeRpcDeadline(ADDRESS_CHANGE_BUDGET_MS) } as const;

export const AddressEntryInput = InputObject({
  chainId: t.String({ description: `CAIP-2 chain id: ${CHAIN_CHOICES}.` }),
  address: t.String({ description: "Base58check TRON address (T..., 34 characters)." }),
});
