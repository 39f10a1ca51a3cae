// The console's backfill panel in a real browser (Debian's Chromium driven by playwright-core) against the real stack
// and tools/tron-sim holding past transfers to a wallet: start a backfill by time, watch its progress bar and counts
// reach completed, then start one and cancel it while it runs. Screenshots go to test-results/console/.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Locator } from "playwright-core";
import { startTronSim, type TronSim } from "../../../tools/tron-sim/server.ts";
import { startEventsStack, type EventsStack } from "../../support/events.ts";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(import.meta.dir, "..", "..", "..", "test-results", "console");
const haveChromium = existsSync(CHROMIUM);
const WALLET = "TPH479jG91GcRbPr4pnx7bwdN47twUvuy8";

let env: EventsStack;
let sim: TronSim;
let browser: BrowserContext;
let profile: string;

beforeAll(async () => {
  if (!haveChromium) return;
  mkdirSync(SHOTS, { recursive: true });
  sim = startTronSim({ blockMs: 0, recorded: false, startNumber: 40_000_000, backlog: 400, txPerBlock: 5, poolSize: 50, history: { to: [WALLET], every: 10 } });
  env = await startEventsStack({ env: { MATCHER_CHAINS: "tron:nile", MATCHER_POLL_MS: "50" }, matcher: { nodeUrls: { "tron:nile": sim.url } } });
  profile = mkdtempSync(join(tmpdir(), "console-chromium-"));
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1280, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await env?.stop();
  await sim?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
}, 60_000);

async function seeText(locator: Locator, text: string, timeout = 30_000): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout });
}

function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

test.skipIf(!haveChromium)("start a backfill, watch it complete, start another and cancel it", async () => {
  const { key } = await env.stack.createKey();
  const auth = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const sub = (await (
    await fetch(`${env.stack.baseUrl}/v1/subscriptions`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ destination: { type: "https", url: env.receiver.url("/console-backfill") }, events: ["wallet.transfer.confirmed"] }),
    })
  ).json()) as { id: string; destination: { secret: string } };
  env.receiver.setSecrets("/console-backfill", [sub.destination.secret]);
  const patched = await fetch(`${env.stack.baseUrl}/v1/subscriptions/${sub.id}/filters/addresses`, {
    method: "PATCH",
    headers: auth,
    body: JSON.stringify({ add: [{ chainId: "tron:nile", address: WALLET }] }),
  });
  expect(patched.status).toBe(200);

  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${env.stack.baseUrl}/console#/subscriptions/${sub.id}`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Backfills" }).waitFor();

  const form = page.getByRole("form", { name: "Start a backfill" });
  await form.getByLabel("Chain").selectOption("tron:nile");
  await form.getByLabel("Since").fill(localInput(Date.now() - 30 * 60_000));
  await form.getByRole("button", { name: "Backfill" }).click();
  await seeText(page.locator("#messages"), "queued");
  const rows = page.getByRole("table", { name: "Backfills" }).locator("tbody tr");
  await seeText(rows.first(), "completed");
  const first = (await rows.first().textContent()) ?? "";
  const want = sim.chain.history.filter((h) => h.blockNumber <= sim.chain.solid().block.block_header.raw_data.number).length;
  expect(first).toContain(`${want} made, 0 skipped`);
  expect(first).toMatch(/(\d+) \/ \1 blocks/);
  await page.screenshot({ path: join(SHOTS, "backfill-completed.png"), fullPage: true });

  // A slow node: the next job is still running when its Cancel button is pressed.
  sim.setFaults([{ path: "wallet/gettransactioninfobyblocknum", delayMs: 300 }]);
  try {
    await form.getByRole("button", { name: "Backfill" }).click();
    await seeText(rows.first(), "running");
    await rows.first().getByRole("button", { name: "Cancel" }).click();
    await seeText(rows.first(), "canceled");
    expect(await rows.first().getByRole("button", { name: "Cancel" }).isHidden()).toBe(true);
    await page.screenshot({ path: join(SHOTS, "backfill-canceled.png"), fullPage: true });
  } finally {
    sim.setFaults([]);
  }
  expect(errors).toEqual([]);
}, 180_000);
