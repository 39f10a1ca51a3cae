// `bun run bench <name>` runs bench/<name>.ts's default export.
const name = process.argv[2];
if (!name || !/^[a-z0-9-]+$/.test(name)) {
  console.error("usage: bun run bench <name>   (a file bench/<name>.ts)");
  process.exit(2);
}
const mod = (await import(`./${name}.ts`)) as { default: () => unknown };
await mod.default();

export {};
