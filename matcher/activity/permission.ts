// wallet.permission.*: an AccountPermissionUpdateContract, the permissions as the transaction sets them (java-tron's
// account_contract.proto: owner_address, owner, witness, actives; each Permission with permission_name, threshold,
// operations and keys [{address, weight}]). Proto3 JSON leaves defaults out (a zero threshold or weight, an empty
// name or operations, the Owner type), so an absent field is its default. Key addresses are hex with visible=false,
// base58 with visible=true; operations are hex in both forms.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { PermissionSchema } from "../../gen/webhooks/delivery/v1/delivery_pb.ts";
import { normalizeAddress } from "../decode.ts";
import type { TronContractValue } from "../../common/tron-node/types.ts";
import { toCount } from "./numbers.ts";
import type { ActivityFields } from "./types.ts";

type Permission = MessageInitShape<typeof PermissionSchema>;

function permission(value: unknown): Permission | null {
  if (typeof value !== "object" || value === null) return null;
  const p = value as { permission_name?: unknown; threshold?: unknown; operations?: unknown; keys?: unknown };
  const threshold = toCount(p.threshold);
  if (threshold === null) return null;
  const keys: { address: string; weight: bigint }[] = [];
  for (const key of Array.isArray(p.keys) ? (p.keys as { address?: unknown; weight?: unknown }[]) : []) {
    const address = typeof key?.address === "string" ? normalizeAddress(key.address) : null;
    const weight = toCount(key?.weight);
    if (address === null || weight === null) return null;
    keys.push({ address, weight });
  }
  return {
    name: typeof p.permission_name === "string" ? p.permission_name : "",
    threshold,
    operations: typeof p.operations === "string" ? p.operations : "",
    keys,
  };
}

export function decodePermissionUpdate(v: TronContractValue): ActivityFields | null {
  const address = typeof v.owner_address === "string" ? normalizeAddress(v.owner_address) : null;
  const owner = permission(v.owner);
  const witness = v.witness === undefined ? undefined : permission(v.witness);
  const actives: Permission[] = [];
  for (const active of Array.isArray(v.actives) ? (v.actives as unknown[]) : []) {
    const decoded = permission(active);
    if (decoded === null) return null;
    actives.push(decoded);
  }
  if (address === null || owner === null || witness === null) return null;
  return {
    family: "permission",
    parties: [{ address, role: "owner" }],
    detail: { case: "permission", value: { address, owner, witness, actives } },
  };
}
