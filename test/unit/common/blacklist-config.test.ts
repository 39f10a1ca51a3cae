// BLACKLIST_CONTRACTS: comma-separated chainId:address pairs (a chain id holds a colon: split at the last one).
import { describe, expect, test } from "bun:test";
import { DEFAULT_BLACKLIST_CONTRACTS, parseBlacklistContracts } from "../../../common/blacklist-config.ts";
import { loadConfig } from "../../../common/config.ts";

const USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
const NILE_USDT = "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf";

describe("BLACKLIST_CONTRACTS", () => {
  test("the default is USDT on mainnet, and nothing elsewhere", () => {
    expect(DEFAULT_BLACKLIST_CONTRACTS).toBe(`tron:mainnet:${USDT}`);
    const sets = loadConfig({}).blacklistContracts;
    expect([...sets["tron:mainnet"]]).toEqual([USDT]);
    expect(sets["tron:nile"].size).toBe(0);
    expect(sets["tron:shasta"].size).toBe(0);
  });

  test("pairs per chain, spaces and empty entries ignored, duplicates once", () => {
    const sets = parseBlacklistContracts(` tron:mainnet:${USDT}, tron:nile:${NILE_USDT},,tron:mainnet:${USDT},tron:nile:${USDT}`);
    expect([...sets["tron:mainnet"]]).toEqual([USDT]);
    expect([...sets["tron:nile"]]).toEqual([NILE_USDT, USDT]);
    expect(loadConfig({ BLACKLIST_CONTRACTS: `tron:shasta:${USDT}` }).blacklistContracts["tron:shasta"].has(USDT)).toBe(true);
  });

  test("an entry that is not chainId:address is a configuration error naming it", () => {
    for (const bad of [USDT, `mainnet:${USDT}`, `tron:mainnet:${USDT.slice(0, -1)}x`, "tron:mainnet:", `tron:mainnet:41a614f803b6fd780986a42c78ec9c7f77e6ded13c`, `tron:mars:${USDT}`]) {
      expect(() => parseBlacklistContracts(bad)).toThrow(`BLACKLIST_CONTRACTS: "${bad}" is not chainId:address`);
    }
    expect(() => loadConfig({ BLACKLIST_CONTRACTS: "nope" })).toThrow("BLACKLIST_CONTRACTS");
  });
});
