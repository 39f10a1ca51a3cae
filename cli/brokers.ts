// `bun run brokers add|list|remove`: the message brokers queue destinations may name, managed straight on the
// registry's database (no running service needed; migrations run first). Exit codes as `bun run keys`: 0 done,
// 1 refused or not found, 2 bad input (usage). The URL is stored encrypted (APP_SECRET) and listed masked.
import { isBrokerName, parseBrokerUrl } from "../registry/destination.ts";
import type { RegistryStore } from "../registry/store.ts";
import { runCli, UsageError, withSession } from "./registry-cli.ts";

const USAGE = `Usage:
  bun run brokers add NAME amqp://user:pass@host:5672/vhost    (or amqps://…, nats://host:4222, tls://…)
  bun run brokers list
  bun run brokers remove NAME
NAME: 1 to 64 characters of letters, digits, '.', '_' and '-', starting with a letter or digit.`;

function nameArg(value: string | undefined): string {
  if (value === undefined) throw new UsageError("missing NAME");
  if (!isBrokerName(value)) throw new UsageError(`"${value}" is not a valid broker name`);
  return value;
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
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

// A subscription created between the count and the delete: the foreign key refuses, nothing changes.
await runCli(USAGE, main, (message) => (/foreign key|violates/i.test(message) ? "the broker is in use by a subscription" : message));
