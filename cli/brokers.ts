// `bun run brokers add|list|remove|grant|revoke|grants`: the message brokers queue destinations may name and what
// each API key may name on them (registry/broker-grants.ts), managed straight on the
// registry's database (no running service needed; migrations run first). Exit codes as `bun run keys`: 0 done,
// 1 refused or not found, 2 bad input (usage). The URL is stored encrypted (APP_SECRET) and listed masked.
import { parseArgs } from "node:util";
import { isId } from "../common/ids.ts";
import { EVERY_KEY, KEY_ID_PLACEHOLDER } from "../registry/broker-grants.ts";
import { isBrokerName, parseBrokerUrl } from "../registry/destination.ts";
import type { RegistryStore } from "../registry/db/store.ts";
import { runCli, UsageError, withSession } from "./registry-cli.ts";

const USAGE = `Usage:
  bun run brokers add NAME amqp://user:pass@host:5672/vhost    (or amqps://…, nats://host:4222, tls://…)
  bun run brokers list
  bun run brokers remove NAME
  bun run brokers grant NAME KEY_ID --prefix PREFIX [--default-exchange]
  bun run brokers revoke NAME KEY_ID [--prefix PREFIX]
  bun run brokers grants [NAME]
NAME: 1 to 64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit.
KEY_ID: an API key's id (key_…), or '*' for every key. A key may name on a broker only the exchanges (AMQP) or
subjects (NATS) that start with one of its prefixes there; PREFIX may hold ${KEY_ID_PLACEHOLDER}, replaced by the key's
id ("tenants.${KEY_ID_PLACEHOLDER}." with '*' gives each key its own namespace); "" allows every name.
--default-exchange: the key may also use AMQP's default exchange, with routing keys (queue names) under PREFIX.`;

function nameArg(value: string | undefined): string {
  if (value === undefined) throw new UsageError("missing NAME");
  if (!isBrokerName(value)) throw new UsageError(`"${value}" is not a valid broker name`);
  return value;
}

/** NAME and KEY_ID of grant / revoke. */
function grantTarget(positionals: string[]): [string, string] {
  if (positionals.length > 2) throw new UsageError(`unexpected argument "${positionals[2]}"`);
  const name = nameArg(positionals[0]);
  const keyId = positionals[1];
  if (keyId === undefined) throw new UsageError("missing KEY_ID");
  if (keyId !== EVERY_KEY && !isId("key", keyId)) throw new UsageError(`"${keyId}" is not an API key id (key_…) or '*'`);
  return [name, keyId];
}

function withStore<T>(fn: (store: RegistryStore) => Promise<T>): Promise<T> {
  return withSession((session) => fn(session.store));
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError("missing command");
  if (command === "help" || command === "--help" || command === "-h") {
    console.log(USAGE);
    return 0;
  }
  switch (command) {
    case "add": {
      if (rest.length > 2) throw new UsageError(`unexpected argument "${rest[2]}"`);
      const name = nameArg(rest[0]);
      if (rest[1] === undefined) throw new UsageError("missing URL");
      let parsed;
      try {
        parsed = parseBrokerUrl(rest[1]);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const url = rest[1];
      return withStore(async (store) => {
        if (!(await store.addBroker(name, parsed.type, url))) {
          console.error(`error: a broker named ${name} already exists (remove it first)`);
          return 1;
        }
        console.log(`Added ${parsed.type} broker ${name}: ${parsed.masked}`);
        return 0;
      });
    }
    case "list": {
      if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"`);
      return withStore(async (store) => {
        console.log(["name", "type", "url", "created"].join("\t"));
        for (const b of await store.listBrokers()) console.log([b.name, b.type, b.maskedUrl, b.createdAt.toISOString()].join("\t"));
        return 0;
      });
    }
    case "remove": {
      if (rest.length > 1) throw new UsageError(`unexpected argument "${rest[1]}"`);
      const name = nameArg(rest[0]);
      return withStore(async (store) => {
        const out = await store.removeBroker(name);
        if (out.usedBy > 0) {
          console.error(`error: broker ${name} is used by ${out.usedBy} subscription(s); change or delete them first`);
          return 1;
        }
        if (!out.removed) {
          console.error(`error: no broker ${name}`);
          return 1;
        }
        console.log(`Removed broker ${name}`);
        return 0;
      });
    }
    case "grant": {
      const { values, positionals } = parseArgs({
        args: rest,
        options: { prefix: { type: "string" }, "default-exchange": { type: "boolean", default: false } },
        allowPositionals: true,
        strict: true,
      });
      const [name, keyId] = grantTarget(positionals);
      if (values.prefix === undefined) throw new UsageError('missing --prefix (--prefix "" allows every name)');
      const prefix = values.prefix;
      return withStore(async (store) => {
        if (keyId !== EVERY_KEY && !(await store.getApiKey(keyId))) {
          console.error(`error: no API key ${keyId}`);
          return 1;
        }
        if (!(await store.grantBroker({ broker: name, keyId, prefix, defaultExchange: values["default-exchange"] }))) {
          console.error(`error: no broker ${name}`);
          return 1;
        }
        const defaults = values["default-exchange"] ? ", the default exchange included" : "";
        console.log(`Granted ${keyId === EVERY_KEY ? "every key" : keyId} the names under ${JSON.stringify(prefix)} on ${name}${defaults}`);
        return 0;
      });
    }
    case "revoke": {
      const { values, positionals } = parseArgs({ args: rest, options: { prefix: { type: "string" } }, allowPositionals: true, strict: true });
      const [name, keyId] = grantTarget(positionals);
      return withStore(async (store) => {
        const n = await store.revokeBrokerGrant(name, keyId, values.prefix);
        if (n === 0) {
          console.error(`error: no such grant on ${name}`);
          return 1;
        }
        console.log(`Revoked ${n} grant(s) of ${keyId} on ${name}; subscriptions already made keep their destination until changed`);
        return 0;
      });
    }
    case "grants": {
      if (rest.length > 1) throw new UsageError(`unexpected argument "${rest[1]}"`);
      const name = rest[0] === undefined ? undefined : nameArg(rest[0]);
      return withStore(async (store) => {
        console.log(["broker", "key", "prefix", "default_exchange", "created"].join("\t"));
        for (const g of await store.listBrokerGrants(name)) {
          console.log([g.broker, g.keyId, JSON.stringify(g.prefix), String(g.defaultExchange), g.createdAt.toISOString()].join("\t"));
        }
        return 0;
      });
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

// A subscription created between the count and the delete: the foreign key refuses, nothing changes.
await runCli(USAGE, main, (message) => (/foreign key|violates/i.test(message) ? "the broker is in use by a subscription" : message));
