// Test certificates made at test time with openssl: a CA (trusted through DELIVERY_CA_FILE) and a leaf for
// localhost / 127.0.0.1 / ::1 (usable as a server or a client certificate: the mTLS tests use it both ways), plus an
// unrelated CA's leaf for the same names (the "untrusted certificate" case).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestPki {
  dir: string;
  /** PEM of the trusted test CA; its path goes into DELIVERY_CA_FILE. */
  caFile: string;
  caPem: string;
  /** Leaf signed by the trusted CA. */
  cert: string;
  key: string;
  /** Leaf for the same names signed by a CA nobody trusts. */
  untrustedCert: string;
  untrustedKey: string;
}

function openssl(args: string[], cwd: string): void {
  const res = Bun.spawnSync(["openssl", ...args], { cwd, stderr: "pipe", stdout: "pipe" });
  if (res.exitCode !== 0) throw new Error(`openssl ${args[0]} failed: ${res.stderr.toString()}`);
}

function makeCa(dir: string, name: string): void {
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(
    ["req", "-x509", "-new", "-key", `${name}.key`, "-sha256", "-days", "2", "-subj", `/CN=${name} test CA`, "-out", `${name}.pem`,
      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
    dir,
  );
}

function makeLeaf(dir: string, ca: string, name: string, cn = "localhost"): void {
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", `${name}.key`], dir);
  openssl(["req", "-new", "-key", `${name}.key`, "-subj", `/CN=${cn}`, "-out", `${name}.csr`], dir);
  writeFileSync(
    join(dir, `${name}.ext`),
    "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\n",
  );
  openssl(
    ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`, "-CAcreateserial", "-days", "2", "-sha256",
      "-extfile", `${name}.ext`, "-out", `${name}.pem`],
    dir,
  );
}

export function createTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "receiver-pki-"));
  makeCa(dir, "ca");
  makeLeaf(dir, "ca", "leaf");
  makeCa(dir, "rogue");
  makeLeaf(dir, "rogue", "rogue-leaf");
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return {
    dir,
    caFile: join(dir, "ca.pem"),
    caPem: read("ca.pem"),
    cert: read("leaf.pem"),
    key: read("leaf.key"),
    untrustedCert: read("rogue-leaf.pem"),
    untrustedKey: read("rogue-leaf.key"),
  };
}

/** A leaf of the trusted test CA whose subject CN is `cn` (an internal caller's client certificate names it). */
export function issueLeaf(pki: TestPki, cn: string): { cert: string; key: string } {
  const name = `leaf-${cn.replace(/[^a-z0-9]/gi, "_")}`;
  makeLeaf(pki.dir, "ca", name, cn);
  return { cert: readFileSync(join(pki.dir, `${name}.pem`), "utf8"), key: readFileSync(join(pki.dir, `${name}.key`), "utf8") };
}
