// The delivery worker's public surface; the parts are named in lifecycle.ts.
export { DeliveryWorker } from "./lifecycle.ts";
export type { WorkerOptions } from "./defaults.ts";
