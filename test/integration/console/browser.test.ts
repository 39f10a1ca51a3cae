// The console in a real browser (Debian's Chromium driven by playwright-core) against the real stack: sign in,
// create a subscription, paste addresses, fire a test event and watch it arrive, break the endpoint, see the failure
// and its attempts, recover. A screenshot of each page goes to test-results/console/ for review.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type BrowserContext, type Locator, type Page } from "playwright-core";
import { hexToBase58 } from "../../../common/tron-address.ts";
import { addOpenBroker, NATS_URL, RABBIT_URL, randomName } from "../../support/brokers.ts";
import { call, startEventsStack, type EventsStack } from "../../support/events.ts";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(import.meta.dir, "..", "..", "..", "test-results", "console");
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`console.browser.test: skipped, ${CHROMIUM} is absent (apt-get install -y chromium)`);

let env: EventsStack;
let browser: BrowserContext;
let profile: string;

beforeAll(async () => {
  if (!haveChromium) return;
  mkdirSync(SHOTS, { recursive: true });
  env = await startEventsStack({ env: { RETRY_SCHEDULE: "0,50ms,50ms" } });
  profile = mkdtempSync(join(tmpdir(), "console-chromium-"));
  // A fresh user-data-dir each run (playwright takes it as the persistent context's directory).
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    viewport: { width: 1280, height: 900 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync",
    ],
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await env?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
}, 60_000);

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

/** Waits until `locator` shows `text` (playwright-core has no auto-waiting assertions of its own). */
async function seeText(locator: Locator, text: string, timeout = 10_000): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout });
}

async function seeCount(locator: Locator, n: number, timeout = 10_000): Promise<void> {
  const deadline = Date.now() + timeout;
  while ((await locator.count()) !== n) {
    if (Date.now() > deadline) throw new Error(`expected ${n} of ${locator}, saw ${await locator.count()}`);
    await Bun.sleep(50);
  }
}

/** A new page signed in with `key` at `/console` + `hash`, and the page errors it will collect. */
async function signedIn(key: string, hash = ""): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(`${env.stack.baseUrl}/console${hash}`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  return { page, errors };
}

/** datetime-local value (local time, minutes) for `ms`. */
function localInput(ms: number): string {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

test.skipIf(!haveChromium)("sign in, subscribe, paste addresses, deliver, fail, inspect attempts, recover", async () => {
  const { key } = await env.stack.createKey();
  const hook = "/console-hook";
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(String(e)));

  await page.goto(`${env.stack.baseUrl}/console`);
  await page.getByLabel("API key").fill("whk_wrong");
  await page.getByRole("button", { name: "Sign in" }).click();
  // The API's own words: its error code and sentence.
  await seeText(page.getByRole("alert"), "unauthorized");
  await shot(page, "01-sign-in");
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Subscriptions" }).waitFor();
  expect(await page.evaluate(() => Object.keys(localStorage).length)).toBe(0);

  await page.getByLabel("Destination URL (https)").fill(env.receiver.url(hook));
  await page.getByLabel("service.ping").check();
  await page.getByRole("button", { name: "Create subscription" }).click();
  await page.locator("output.secret").or(page.getByRole("alert")).first().waitFor();
  expect(await page.locator("#messages").textContent()).toStartWith("Subscription sub_");
  const secret = (await page.locator("output.secret").textContent()) ?? "";
  expect(secret).toStartWith("whsec_");
  env.receiver.setSecrets(hook, [secret]);
  await shot(page, "02-subscriptions");
  await page.locator("a[href^='#/subscriptions/sub_']").first().click();
  await page.getByRole("heading", { name: /^Subscription sub_/ }).waitFor();
  // The secret is not shown again anywhere on the subscription's page.
  expect(await page.content()).not.toContain(secret);

  const addresses = Array.from({ length: 2_000 }, (_, i) => hexToBase58(`41${(i + 1).toString(16).padStart(40, "0")}`));
  // A paste: the text lands in the field at once (typing 70 kB key by key would only slow the test).
  await page.getByLabel("Addresses to add").evaluate((el, text) => {
    (el as unknown as { value: string }).value = text;
  }, [...addresses, "Tnotanaddress"].join("\n"));
  await page.getByRole("button", { name: "Add addresses" }).click();
  await seeText(page.locator(".added-count"), "2000 added, 1 skipped, 0 already present.");
  await seeText(page.getByLabel("Skipped addresses"), "Tnotanaddress: invalid_address");
  await page.getByRole("button", { name: "More addresses" }).waitFor();
  await shot(page, "03-addresses");

  await page.getByRole("button", { name: "Send test service.ping" }).click();
  await page.locator("tr[data-status='delivered']").first().waitFor({ timeout: 20_000 });
  expect(env.receiver.deliveries(hook)[0]?.verified).toBe(true);
  await shot(page, "04-delivered");

  env.receiver.setBehaviour(hook, { kind: "status", status: 500, body: "down for maintenance" });
  await page.getByRole("button", { name: "Send test service.ping" }).click();
  const failed = page.locator("tr[data-status='failed']").first();
  await failed.waitFor({ timeout: 20_000 });
  await failed.getByRole("button").click();
  await seeCount(page.locator("table.attempts tbody tr"), 3);
  await seeText(page.locator("table.attempts"), "down for maintenance");
  await seeText(page.locator(".last-failure"), "HTTP 500", 10_000);
  // The health sparkline (refreshed every 2 s) shows this hour's rate as a dot, one hour with attempts drawing no line,
  // and says it in words.
  await seeCount(page.locator("svg.sparkline circle"), 1);
  expect(await page.locator("svg.sparkline").getAttribute("aria-label")).toMatch(/: (none, ){23}\d+%$/);
  await shot(page, "05-failure-and-attempts");

  env.receiver.setBehaviour(hook, { kind: "ok" });
  await page.getByLabel("Since", { exact: true }).last().fill(localInput(Date.now() - 10 * 60_000));
  await page.getByRole("button", { name: "Recover", exact: true }).click();
  await seeText(page.getByRole("status"), "1 event queued again.");
  await seeCount(page.locator("tr[data-status='failed']"), 0, 20_000);
  await seeText(page.locator("table.attempts"), "manual", 10_000);
  await shot(page, "06-recovered");

  await page.getByRole("link", { name: "Events" }).click();
  await page.getByRole("heading", { name: "Events", level: 1 }).waitFor();
  // A message speaks of the page it was shown on: navigating clears it.
  await seeCount(page.getByRole("status"), 0);
  await page.getByRole("heading", { name: "Search events", level: 2 }).waitFor();
  await seeCount(page.locator("tr[data-event]"), 2);
  await shot(page, "07-events");
  // The filters of GET /v1/events: an until before both events, then one subscription (another key's id is the API's 404).
  await page.getByLabel("Until").fill(localInput(Date.now() - 60 * 60_000));
  await page.getByRole("button", { name: "Filter" }).click();
  await seeCount(page.locator("tr[data-event]"), 0);
  await page.getByLabel("Until").fill("");
  await page.getByLabel("Subscription").fill("sub_01HZZZZZZZZZZZZZZZZZZZZZZZ");
  await page.getByRole("button", { name: "Filter" }).click();
  await seeText(page.getByRole("alert"), "not_found: No such subscription.");

  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "08-phone");
  expect(errors).toEqual([]);
}, 120_000);

test.skipIf(!haveChromium)("a queue destination is edited in its own fields, disabling keeps it a queue destination, and it can become https", async () => {
  const { key } = await env.stack.createKey();
  const broker = randomName("console-nats");
  await addOpenBroker(env.stack.registry.store, broker, "nats", NATS_URL);
  const destination = { type: "nats", broker, subject: `${randomName("console")}.events` };
  const created = await call<{ id: string }>(env.stack.baseUrl, key, "POST", "/v1/subscriptions", { destination, events: ["service.ping"] });
  expect(created.status).toBe(201);
  const { page, errors } = await signedIn(key);
  await seeText(page.locator("td.url"), `nats: broker ${broker}, subject ${destination.subject}`);
  await page.locator(`a[href='#/subscriptions/${created.body.id}']`).click();
  // The settings form holds the stored destination, its type's fields filled in.
  await page.getByLabel("Subject").waitFor();
  expect([await page.getByLabel("Destination type").inputValue(), await page.getByLabel("Broker").inputValue(), await page.getByLabel("Subject").inputValue()])
    .toEqual(["nats", broker, destination.subject]);
  await page.getByRole("button", { name: "Disable" }).click();
  // Before, the console sent {"type": "https", "url": ""} here: an invalid_request, and the subscription stayed enabled.
  await seeText(page.getByRole("status"), "Subscription disabled.");
  const after = await call<{ status: string; destination: unknown }>(env.stack.baseUrl, key, "GET", `/v1/subscriptions/${created.body.id}`);
  expect([after.body.status, after.body.destination]).toEqual(["disabled", destination]);
  await shot(page, "09-queue-destination");
  // PUT may change the type: the form turns it into an https destination.
  await page.getByLabel("Destination type").selectOption("https");
  await page.getByLabel("Destination URL (https)").fill("https://hooks.example.com/tron");
  await page.getByRole("button", { name: "Save" }).click();
  await seeText(page.getByRole("status"), "Saved.");
  const changed = await call<{ status: string; destination: unknown }>(env.stack.baseUrl, key, "GET", `/v1/subscriptions/${created.body.id}`);
  expect([changed.body.status, changed.body.destination]).toEqual(["disabled", { type: "https", url: "https://hooks.example.com/tron" }]);
  expect(errors).toEqual([]);
}, 120_000);

test.skipIf(!haveChromium)("account activity: the form offers its kinds, and the event list shows each event's main fields", async () => {
  const { key } = await env.stack.createKey();
  const hook = "/console-activity";
  const { page, errors } = await signedIn(key);
  await page.getByRole("heading", { name: "Subscriptions" }).waitFor();
  // Every kind of the contract is a checkbox of the form, the activity kinds among them.
  for (const kind of ["wallet.approval.broadcasted", "wallet.permission.confirmed", "wallet.resource.broadcasted", "wallet.blacklist.confirmed"]) {
    await page.getByLabel(kind, { exact: true }).waitFor();
  }
  await page.getByLabel("Destination URL (https)").fill(env.receiver.url(hook));
  await page.getByLabel("wallet.transfer.broadcasted", { exact: true }).uncheck();
  await page.getByLabel("wallet.approval.broadcasted", { exact: true }).check();
  await page.getByLabel("wallet.resource.confirmed", { exact: true }).check();
  await page.getByRole("button", { name: "Create subscription" }).click();
  await page.getByLabel("New signing secret").waitFor();
  env.receiver.setSecrets(hook, [(await page.locator("output.secret").textContent()) ?? ""]);
  await seeText(page.locator("tbody tr"), "wallet.approval.broadcasted, wallet.resource.confirmed");

  // A sample of each from the subscription's page (POST …/test), and a transfer beside them.
  await page.locator("a[href^='#/subscriptions/sub_']").first().click();
  await page.getByRole("heading", { name: /^Subscription sub_/ }).waitFor();
  for (const kind of ["wallet.transfer.confirmed", "wallet.approval.broadcasted", "wallet.resource.confirmed"]) {
    await page.getByRole("button", { name: `Send test ${kind}`, exact: true }).click();
    await seeText(page.getByRole("status"), "Test event evt_");
    await seeText(page.locator("tr[data-event]").first(), kind);
  }
  await seeCount(page.locator("tr[data-status='delivered']"), 3, 20_000);
  const row = (kind: string) => page.locator("tr[data-event]").filter({ hasText: kind });
  // The mainnet samples: 12.5 USDT paid; an unlimited USDT allowance; 5,126 TRX's energy delegated.
  expect(await row("wallet.transfer.confirmed").locator("td.summary").textContent()).toBe("12.5 USDT");
  expect(await row("wallet.approval.broadcasted").locator("td.summary").textContent()).toBe("unlimited USDT");
  expect(await row("wallet.resource.confirmed").locator("td.summary").textContent()).toBe("delegate ENERGY 5,126 TRX");
  expect(env.receiver.deliveries(hook).every((d) => d.verified)).toBe(true);
  // The kind filter of the event search takes an activity kind.
  await page.getByLabel("Kind").selectOption("wallet.approval.broadcasted");
  await page.getByRole("button", { name: "Filter" }).click();
  await seeCount(page.locator("tr[data-event]"), 1);
  await shot(page, "11-activity-events");
  expect(errors).toEqual([]);
}, 120_000);

test.skipIf(!haveChromium)("the event list: 50 at a time, 'Older events' adds the next page, a filter that matches none says so; delete", async () => {
  const { key } = await env.stack.createKey();
  const created = await call<{ id: string }>(env.stack.baseUrl, key, "POST", "/v1/subscriptions", {
    destination: { type: "https", url: env.receiver.url("/console-pages") },
    events: ["service.ping"],
  });
  expect(created.status).toBe(201);
  for (let i = 0; i < 55; i++) {
    expect((await call(env.stack.baseUrl, key, "POST", `/v1/subscriptions/${created.body.id}/test`)).status).toBe(200);
  }
  const { page, errors } = await signedIn(key, "#/events");
  await seeCount(page.locator("tr[data-event]"), 50);
  const older = page.getByRole("button", { name: "Older events" });
  await older.click();
  await seeCount(page.locator("tr[data-event]"), 55);
  await older.waitFor({ state: "hidden" });
  // The refresh reads both pages again: the rows stay 55, newest first, none repeated.
  await Bun.sleep(3_500);
  const ids = await page.locator("tr[data-event]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-event")));
  expect(ids.length).toBe(55);
  expect(new Set(ids).size).toBe(55);
  expect([...ids].sort().reverse()).toEqual(ids);
  // Filtering starts again from the newest page.
  await page.getByLabel("Until").fill(localInput(Date.now() - 60 * 60_000));
  await page.getByRole("button", { name: "Filter" }).click();
  await seeText(page.locator("tr.empty"), "No events match.");
  await seeCount(page.locator("tr[data-event]"), 0);
  expect(await older.isHidden()).toBe(true);

  // Deleting from the subscription's page lands on the list, with the message shown there (not cleared by the move).
  await page.getByRole("link", { name: "Subscriptions" }).click();
  await page.locator(`a[href='#/subscriptions/${created.body.id}']`).click();
  page.once("dialog", (d) => void d.accept());
  await page.getByRole("button", { name: "Delete" }).click();
  await seeText(page.getByRole("status"), `Subscription ${created.body.id} deleted.`);
  await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
  await seeCount(page.locator(`a[href='#/subscriptions/${created.body.id}']`), 0);
  expect(errors).toEqual([]);
}, 120_000);

test.skipIf(!haveChromium)("queue destinations are created in the console: NATS and AMQP as given, an unknown broker in the API's words", async () => {
  const { key } = await env.stack.createKey();
  const nats = randomName("console-nats");
  const amqp = randomName("console-amqp");
  await addOpenBroker(env.stack.registry.store, nats, "nats", NATS_URL);
  await addOpenBroker(env.stack.registry.store, amqp, "amqp", RABBIT_URL);
  const { page, errors } = await signedIn(key);
  await page.getByRole("heading", { name: "Subscriptions", level: 1 }).waitFor();
  const create = page.getByRole("button", { name: "Create subscription" });

  // A broker nobody registered: the API's own code and sentence, and nothing created.
  await page.getByLabel("Destination type").selectOption("nats");
  await page.getByLabel("Broker").fill("no-such-broker");
  await page.getByLabel("Subject").fill("payments.tron");
  await create.click();
  await seeText(page.getByRole("alert"), 'invalid_request: No nats broker named "no-such-broker" is registered.');

  const subject = `${randomName("console")}.events`;
  await page.getByLabel("Broker").fill(nats);
  await page.getByLabel("Subject").fill(subject);
  await create.click();
  await seeText(page.getByRole("status"), "created.");
  await page.getByLabel("New signing secret").waitFor();
  await seeText(page.locator("td.url"), `nats: broker ${nats}, subject ${subject}`);
  // After a create the form is back to its first state, the https fields included.
  await page.getByLabel("Destination URL (https)").waitFor();

  await page.getByLabel("Destination type").selectOption("amqp");
  await page.getByLabel("Broker").fill(amqp);
  await page.getByLabel("Exchange").fill("payments");
  await page.getByLabel("Routing key").fill("tron.usdt");
  await create.click();
  await seeText(page.locator("td.url"), `amqp: broker ${amqp}, exchange "payments", routing key "tron.usdt"`);

  const list = await call<{ items: { destination: unknown }[] }>(env.stack.baseUrl, key, "GET", "/v1/subscriptions");
  expect(list.body.items.map((s) => s.destination)).toEqual([
    { type: "amqp", broker: amqp, exchange: "payments", routingKey: "tron.usdt" },
    { type: "nats", broker: nats, subject },
  ]);
  await shot(page, "10-queue-create");
  expect(errors).toEqual([]);
}, 120_000);
