// The one bounded "wait until my outbox rows are applied", for requests and the keys CLI (README.md "Settle").
import type { RegistryExecutor } from "../db/connection.ts";
import { rowsLeft } from "./outbox.ts";

/** How often the wait looks again. */
const STEP_MS = 50;

export interface SettleOptions {
  budgetMs: number;
  /** PostgreSQL is asked every `askEvery` steps (rows applied by another replica, or taken in by a rebuild). */
  askEvery: number;
  /** Rows this process's applier reports at once: it empties `pending` and resolves `done` when all are in. */
  local?: { pending: Set<number>; done: Promise<unknown> };
  /** True: stop waiting (an applier of the rows' chains failed after the wait began). */
  givenUp?: () => boolean;
}

/** True once every row of `ids` is applied; false when the budget ran out or `givenUp`. The rows stay either way. */
export async function untilApplied(db: RegistryExecutor, ids: readonly number[], opts: SettleOptions): Promise<boolean> {
  const pending = opts.local?.pending ?? new Set(ids);
  const ask = async () => {
    const still = await rowsLeft(db, [...pending]);
    for (const id of [...pending]) if (!still.has(id)) pending.delete(id);
  };
  const deadline = Date.now() + opts.budgetMs;
  // Without a local applier to hear from, PostgreSQL is asked at once.
  if (!opts.local) await ask();
  for (let step = 1; pending.size > 0; step++) {
    const left = deadline - Date.now();
    if (left <= 0) return false;
    const pause = Bun.sleep(Math.min(left, STEP_MS));
    await (opts.local ? Promise.race([opts.local.done, pause]) : pause);
    if (pending.size === 0) break;
    if (opts.givenUp?.()) return false;
    if (step % opts.askEvery === 0) await ask();
  }
  return true;
}
