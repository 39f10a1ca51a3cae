// The address codec against the recorded fixture addresses (valid and invalid, with the reason for each).
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { base58ToHex, evmWordToBase58, hexToBase58, isBase58Address, tronwebUtils } from "../../../common/tron-address.ts";

const { fromHex, getBase58CheckAddress, hexStr2byteArray, isAddressValid, toHex } = tronwebUtils;

interface AddressFixtures {
  valid: string[];
  invalid: { address: string; why: string }[];
  valid_details: { address: string; hex: string; label: string }[];
}

const fixtureDir = join(import.meta.dir, "..", "..", "..", "fixtures", "tron");
const fixtures = JSON.parse(readFileSync(join(fixtureDir, "addresses.json"), "utf8")) as AddressFixtures;

describe("fixture addresses", () => {
  test("the fixture file has both kinds", () => {
    expect(fixtures.valid.length).toBeGreaterThan(20);
    expect(fixtures.invalid.length).toBeGreaterThan(10);
    expect(fixtures.valid_details.length).toBe(fixtures.valid.length);
  });

  for (const { address, hex } of fixtures.valid_details) {
    test(`valid ${address} ⇄ ${hex}`, () => {
      expect(isBase58Address(address)).toBe(true);
      expect(base58ToHex(address)).toBe(hex.toLowerCase());
      expect(hexToBase58(hex)).toBe(address);
      expect(hexToBase58(hex.toUpperCase())).toBe(address);
      expect(evmWordToBase58(hex.slice(2))).toBe(address);
      expect(evmWordToBase58(`0x${"0".repeat(24)}${hex.slice(2)}`)).toBe(address);
    });
  }

  for (const { address, why } of fixtures.invalid) {
    test(`invalid ${JSON.stringify(address)} (${why})`, () => {
      expect(isBase58Address(address)).toBe(false);
      expect(() => base58ToHex(address)).toThrow(TypeError);
    });
  }
});

describe("isBase58Address is strict", () => {
  const usdt = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t";
  test.each([
    [` ${usdt}`],
    [`${usdt} `],
    [`${usdt}\n`],
    [usdt.toLowerCase()],
    ["41a614f803b6fd780986a42c78ec9c7f77e6ded13c"],
    ["0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c"],
    [usdt.slice(0, 33)],
    [`${usdt}1`],
  ])("%p is rejected", (s) => {
    expect(isBase58Address(s)).toBe(false);
  });

  test("non-strings are rejected", () => {
    for (const v of [null, undefined, 42, {}, ["TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"]]) expect(isBase58Address(v)).toBe(false);
  });

  test("a valid base58check of another version byte is rejected", () => {
    // Version 0x42 with a correct checksum (34 characters, like a real one), made with tronweb's own encoder.
    const other = getBase58CheckAddress(hexStr2byteArray(`42${"11".repeat(20)}`));
    expect(other.length).toBe(34);
    expect(isBase58Address(other)).toBe(false);
  });
});

describe("agrees with tronweb on arbitrary input", () => {
  const hex21 = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => `41${Buffer.from(b).toString("hex")}`);

  test("hexToBase58 and base58ToHex match tronweb's fromHex/toHex and round-trip", () => {
    fc.assert(
      fc.property(hex21, (hex) => {
        const b58 = hexToBase58(hex);
        expect(b58).toBe(fromHex(hex));
        expect(isBase58Address(b58)).toBe(true);
        expect(base58ToHex(b58)).toBe(hex);
        expect(toHex(b58)).toBe(hex);
      }),
      { numRuns: 300 },
    );
  });

  test("one changed character makes a valid address invalid, as tronweb judges it", () => {
    const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    fc.assert(
      fc.property(hex21, fc.nat(33), fc.nat(57), (hex, pos, ch) => {
        const b58 = hexToBase58(hex);
        const mutated = b58.slice(0, pos) + alphabet[ch] + b58.slice(pos + 1);
        expect(isBase58Address(mutated)).toBe(isAddressValid(mutated));
        if (mutated !== b58) expect(isBase58Address(mutated)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe("hex forms", () => {
  test("hexToBase58 refuses anything but 41 + 20 bytes", () => {
    for (const bad of ["", "41", "a614f803b6fd780986a42c78ec9c7f77e6ded13c", "0x41a614f803b6fd780986a42c78ec9c7f77e6ded13c", "42a614f803b6fd780986a42c78ec9c7f77e6ded13c", "41a614f803b6fd780986a42c78ec9c7f77e6ded13g"]) {
      expect(() => hexToBase58(bad)).toThrow(TypeError);
    }
  });

  test("evmWordToBase58 decodes the recorded USDT transfer 661f1df8 (topics and calldata)", () => {
    const info = JSON.parse(readFileSync(join(fixtureDir, "mainnet-tx-661f1df8.gettransactioninfobyid.visible.json"), "utf8")) as {
      log: { topics: string[] }[];
    };
    const block = JSON.parse(readFileSync(join(fixtureDir, "mainnet-block-60836289.getblockbynum.visible.json"), "utf8")) as {
      transactions: { txID: string; raw_data: { contract: { parameter: { value: { data?: string; owner_address: string } } }[] } }[];
    };
    const [, fromTopic, toTopic] = info.log[0]!.topics;
    expect(evmWordToBase58(fromTopic!)).toBe("TP4MZM8iDVEfRbtbvcidqVQBt4SQ9Pfi8R");
    expect(evmWordToBase58(toTopic!)).toBe("TW3NSuhT68vXKdamU7Rkq6sfEVCFwoDfGb");
    const tx = block.transactions.find((t) => t.txID.startsWith("661f1df8"))!;
    const value = tx.raw_data.contract[0]!.parameter.value;
    expect(value.owner_address).toBe("TP4MZM8iDVEfRbtbvcidqVQBt4SQ9Pfi8R");
    // The recipient word carries the 0x41 byte inside it: only its last 20 bytes count.
    const recipientWord = value.data!.slice(8, 8 + 64);
    expect(recipientWord.slice(22, 24)).toBe("41");
    expect(evmWordToBase58(recipientWord)).toBe("TW3NSuhT68vXKdamU7Rkq6sfEVCFwoDfGb");
    expect(evmWordToBase58(`0x${recipientWord}`)).toBe("TW3NSuhT68vXKdamU7Rkq6sfEVCFwoDfGb");
  });

  test("evmWordToBase58 refuses other lengths and non-hex", () => {
    for (const bad of ["", "0x", "00".repeat(31), "00".repeat(33), "zz".repeat(32)]) {
      expect(() => evmWordToBase58(bad)).toThrow(TypeError);
    }
  });
});
