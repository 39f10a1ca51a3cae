// Reading the services' prom-client counters from a benchmark that runs them in its own process.
import type { Counter } from "prom-client";

/** A counter's value summed over the label sets `keep` accepts (all of them by default). */
export async function counterSum<T extends string>(counter: Counter<T>, keep: (labels: Partial<Record<NoInfer<T>, string | number>>) => boolean = () => true): Promise<number> {
  return (await counter.get()).values.reduce((sum, v) => sum + (keep(v.labels) ? v.value : 0), 0);
}

/** A counter's values summed per value of one label, over the label sets `keep` accepts. */
export async function counterBy<T extends string>(counter: Counter<T>, label: NoInfer<T>, keep: (labels: Partial<Record<NoInfer<T>, string | number>>) => boolean = () => true): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of (await counter.get()).values) {
    if (!keep(v.labels)) continue;
    const k = String(v.labels[label]);
    out.set(k, (out.get(k) ?? 0) + v.value);
  }
  return out;
}
