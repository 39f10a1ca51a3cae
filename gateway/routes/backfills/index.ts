// The backfill routes (one file per operation), mounted as one plugin.
import { Elysia } from "elysia";
import type { GatewayDeps } from "../../deps.ts";
import { cancelBackfillRoute } from "./cancel.ts";
import { createBackfillRoute } from "./create.ts";
import { getBackfillRoute } from "./get.ts";
import { listBackfillsRoute } from "./list.ts";

export function backfillRoutes(deps: GatewayDeps) {
  return new Elysia({ name: "routes-backfills" })
    .use(createBackfillRoute(deps))
    .use(listBackfillsRoute(deps))
    .use(getBackfillRoute(deps))
    .use(cancelBackfillRoute(deps));
}
