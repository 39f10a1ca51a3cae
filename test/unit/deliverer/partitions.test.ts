// The pure rules of the events' daily partitions (deliverer/partitions.ts): the created_at window an event id allows
// (its ULID time ± the slack), the UTC day a time falls in, and EVENT_RETENTION_DAYS as the configuration reads it.
import { expect, test } from "bun:test";
import fc from "fast-check";
import { decodeTime, monotonicFactory, ulid } from "ulid";
import { loadConfig } from "../../../common/config.ts";
import { ID_TIME_SLACK_MS, eventTimeWindow, utcDay } from "../../../deliverer/partitions.ts";

test("an id's window holds its ULID time, and the window of many ids spans the oldest to the newest", () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1_500_000_000_000, max: 2_500_000_000_000 }), { minLength: 1, maxLength: 20 }), (times) => {
      const w = eventTimeWindow(times.map((t) => `evt_${ulid(t)}`))!;
      expect(w.from.getTime()).toBe(Math.min(...times) - ID_TIME_SLACK_MS);
      expect(w.to.getTime()).toBe(Math.max(...times) + ID_TIME_SLACK_MS);
    }),
  );
});

test("ids minted right after created_at (as Enqueue and the test event do) fall inside the window", () => {
  const next = monotonicFactory();
  const createdAt = Date.now();
  const ids = Array.from({ length: 5_000 }, () => `evt_${next()}`);
  for (const id of ids) {
    const w = eventTimeWindow([id])!;
    expect(createdAt).toBeGreaterThanOrEqual(w.from.getTime());
    expect(createdAt).toBeLessThanOrEqual(w.to.getTime());
  }
});

test("an id without a ULID time gives no window (the lookup then reads every partition)", () => {
  expect(eventTimeWindow(["evt_not-a-ulid"])).toBeUndefined();
  expect(eventTimeWindow([`evt_${ulid()}`, "evt_X000001"])).toBeUndefined();
  expect(eventTimeWindow([])).toBeUndefined();
});

test("the id's time is the ulid package's decodeTime, and no window wherever decodeTime throws", () => {
  const reference = (id: string): number | undefined => {
    try {
      return decodeTime(id.slice(id.indexOf("_") + 1));
    } catch {
      return undefined;
    }
  };
  const crockford = fc.constantFrom(..."0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz");
  const nearUlid = fc.oneof(
    fc.integer({ min: 0, max: 2 ** 48 - 1 }).map((t) => ulid(t)),
    fc.string({ unit: crockford, minLength: 24, maxLength: 28 }),
    fc.string({ minLength: 24, maxLength: 28 }),
    // Crockford characters with one foreign one (I, L, O, U, a symbol, a non-ASCII letter) somewhere.
    fc.tuple(fc.string({ unit: crockford, minLength: 26, maxLength: 26 }), fc.nat(25), fc.constantFrom("I", "L", "O", "U", "i", "-", "é", "\u0100")).map(([s, i, c]) => s.slice(0, i) + c + s.slice(i + 1)),
  );
  fc.assert(
    fc.property(nearUlid, (u) => {
      const id = `evt_${u}`;
      const t = reference(id);
      const w = eventTimeWindow([id]);
      if (t === undefined) expect(w).toBeUndefined();
      else expect(w!.from.getTime()).toBe(t - ID_TIME_SLACK_MS);
    }),
    { numRuns: 2_000 },
  );
});

test("utcDay is the UTC calendar day, whatever the local zone", () => {
  expect(utcDay(Date.parse("2026-11-24T00:00:00.000Z"))).toBe("2026-11-24");
  expect(utcDay(Date.parse("2026-11-24T23:59:59.999Z"))).toBe("2026-11-24");
  expect(utcDay(Date.parse("2026-11-23T23:59:59.999Z"))).toBe("2026-11-23");
});

test("EVENT_RETENTION_DAYS: 30 by default, a whole number of days ≥ 1", () => {
  expect(loadConfig({}).eventRetentionDays).toBe(30);
  expect(loadConfig({ EVENT_RETENTION_DAYS: "7" }).eventRetentionDays).toBe(7);
  for (const bad of ["0", "-1", "1.5", "week"]) {
    expect(() => loadConfig({ EVENT_RETENTION_DAYS: bad })).toThrow(/EVENT_RETENTION_DAYS/);
  }
});
