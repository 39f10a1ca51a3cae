// deploy/k8s, docker-compose.yml and the Dockerfile hold the production security invariants: every manifest parses,
// kustomization lists them all, every container runs hardened with requests and limits and the shared Secret, a
// NetworkPolicy per service admits only its callers (the gateway alone takes outside traffic, the matcher nothing),
// the gateway and the deliverer autoscale, every service has a disruption budget, and every container binds 0.0.0.0
// (BIND_HOST) where loopback is the default. Internal credentials: each calling pod gets its own token only, the
// servers the callers' digests only, nobody a shared INTERNAL_TOKEN; the internal hops run over TLS, and only the
// servers mount the TLS key.
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..", "..");
const K8S = join(ROOT, "deploy", "k8s");

// Parsed YAML: its shape is exactly what these tests check.
type Doc = Record<string, any>;

function parseAll(file: string): Doc[] {
  const parsed = Bun.YAML.parse(readFileSync(file, "utf8")) as Doc | Doc[];
  return (Array.isArray(parsed) ? parsed : [parsed]).filter((d) => d !== null);
}

const files = readdirSync(K8S).filter((f) => f.endsWith(".yaml"));
const docs = files.filter((f) => f !== "kustomization.yaml").flatMap((f) => parseAll(join(K8S, f)));
const kinds = (kind: string) => docs.filter((d) => d.kind === kind);
const named = (kind: string, name: string) => kinds(kind).find((d) => d.metadata?.name === name);
const SERVICES = ["gateway", "registry", "deliverer", "matcher"] as const;
const nameLabel = (selector: Doc | undefined) => selector?.matchLabels?.["app.kubernetes.io/name"] as string | undefined;

test("every manifest parses and kustomization lists every one", () => {
  expect(docs.length).toBeGreaterThan(0);
  for (const d of docs) {
    expect(typeof d.apiVersion).toBe("string");
    expect(typeof d.kind).toBe("string");
  }
  const [kustomization] = parseAll(join(K8S, "kustomization.yaml"));
  expect([...(kustomization!.resources as string[])].sort()).toEqual(files.filter((f) => f !== "kustomization.yaml").sort());
});

describe.each(SERVICES)("%s", (service) => {
  const deployment = named("Deployment", service)!;
  const pod = deployment?.spec?.template?.spec as Doc;

  test("runs hardened, with requests and limits", () => {
    expect(deployment).toBeDefined();
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    for (const c of pod.containers as Doc[]) {
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(c.securityContext.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext.runAsNonRoot).toBe(true);
      expect(c.securityContext.capabilities.drop).toContain("ALL");
      for (const kind of ["requests", "limits"]) {
        expect(c.resources[kind].cpu, `${kind}.cpu`).toBeDefined();
        expect(c.resources[kind].memory, `${kind}.memory`).toBeDefined();
      }
      expect((c.envFrom as Doc[]).map((e) => e.secretRef?.name)).toContain("tron-webhooks-secrets");
    }
  });

  test("has a NetworkPolicy for ingress and egress, admitting only its callers", () => {
    const policies = kinds("NetworkPolicy").filter((p) => nameLabel(p.spec.podSelector) === service);
    expect(policies).toHaveLength(1);
    const spec = policies[0]!.spec as Doc;
    expect(spec.policyTypes).toEqual(expect.arrayContaining(["Ingress", "Egress"]));
    const rules = (spec.ingress ?? []) as Doc[];
    const callers = { gateway: [], registry: ["deliverer", "gateway"], deliverer: ["gateway", "matcher"], matcher: [] }[service];
    if (service === "gateway") {
      // The only service open to outside traffic, and only on its API port.
      expect(rules).toEqual([{ ports: [{ protocol: "TCP", port: 3000 }] }]);
    } else {
      for (const rule of rules) {
        expect(rule.from, "every rule names its sources").toBeDefined();
        for (const peer of rule.from as Doc[]) {
          expect(Object.keys(peer)).toEqual(["podSelector"]);
        }
      }
      const sources = rules.flatMap((r) => (r.from as Doc[]).map((p) => nameLabel(p.podSelector)));
      expect([...new Set(sources)].sort()).toEqual(callers);
    }
    expect(Array.isArray(spec.egress)).toBe(true);
  });

  test("has a PodDisruptionBudget", () => {
    expect(kinds("PodDisruptionBudget").filter((p) => nameLabel(p.spec.selector) === service)).toHaveLength(1);
  });
});

test("each Deployment gets only the secrets it uses: APP_SECRET where values are sealed, DATABASE_URL where it is opened", () => {
  const secretKeys = (name: string) => Object.keys(named("Secret", name)?.stringData ?? {});
  // What each service's code reads: loadAppKeys (registry/index.ts, deliverer/index.ts; the CLIs run in the registry's
  // pod) and config.databaseUrl (those two and matcher/index.ts); the gateway calls them over RPC.
  const uses: Record<string, string[]> = { gateway: [], registry: ["APP_SECRET", "DATABASE_URL"], deliverer: ["APP_SECRET", "DATABASE_URL"], matcher: ["DATABASE_URL"] };
  for (const service of SERVICES) {
    const containers = named("Deployment", service)!.spec.template.spec.containers as Doc[];
    for (const c of containers) {
      const refs = (c.envFrom as Doc[]).map((e) => e.secretRef?.name as string | undefined).filter((n): n is string => n !== undefined);
      for (const ref of refs) expect(named("Secret", ref), `${service} mounts Secret ${ref}`).toBeDefined();
      const mounted = refs.flatMap(secretKeys).filter((k) => k === "APP_SECRET" || k === "DATABASE_URL");
      expect(mounted.sort() as string[], service).toEqual(uses[service]!);
    }
  }
});

test("the gateway and the deliverer autoscale; their Deployments leave replicas to the autoscaler", () => {
  const targets = kinds("HorizontalPodAutoscaler").map((h) => h.spec.scaleTargetRef);
  for (const service of ["gateway", "deliverer"]) {
    expect(targets).toContainEqual({ apiVersion: "apps/v1", kind: "Deployment", name: service });
    expect(named("Deployment", service)!.spec.replicas).toBeUndefined();
  }
});

test("listeners bind 0.0.0.0 in every container", () => {
  const env = named("ConfigMap", "tron-webhooks-env")!.data as Record<string, string>;
  expect(env.BIND_HOST).toBe("0.0.0.0");
  const compose = Bun.YAML.parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8")) as Doc;
  for (const service of SERVICES) {
    expect((compose.services[service].environment as Record<string, string>).BIND_HOST).toBe("0.0.0.0");
  }
  expect(readFileSync(join(ROOT, "Dockerfile"), "utf8")).toMatch(/^ENV BIND_HOST=0\.0\.0\.0$/m);
});

// Who holds which internal credential: its own token for each caller, the callers' digests for each server.
const OWN_TOKEN: Record<(typeof SERVICES)[number], string | undefined> = {
  gateway: "INTERNAL_TOKEN_GATEWAY",
  matcher: "INTERNAL_TOKEN_MATCHER",
  deliverer: "INTERNAL_TOKEN_DELIVERER",
  registry: undefined,
};
const CALLER_DIGESTS: Record<(typeof SERVICES)[number], string[]> = {
  gateway: [],
  matcher: [],
  deliverer: ["INTERNAL_TOKEN_GATEWAY_SHA256", "INTERNAL_TOKEN_MATCHER_SHA256"],
  registry: ["INTERNAL_TOKEN_GATEWAY_SHA256", "INTERNAL_TOKEN_DELIVERER_SHA256"],
};

describe.each(SERVICES)("%s's internal credentials", (service) => {
  const pod = named("Deployment", service)!.spec.template.spec as Doc;
  const container = (pod.containers as Doc[])[0]!;
  /** Every variable the container gets: from the ConfigMaps and Secrets it names, and its own env. */
  const variables = () => {
    const names: string[] = [];
    for (const from of container.envFrom as Doc[]) {
      const source = from.secretRef ? named("Secret", from.secretRef.name) : named("ConfigMap", from.configMapRef.name);
      expect(source, JSON.stringify(from)).toBeDefined();
      names.push(...Object.keys((source!.stringData ?? source!.data) as Record<string, string>));
    }
    for (const e of (container.env ?? []) as Doc[]) names.push(e.name as string);
    return names;
  };

  test("Kubernetes: its own token, no other and no shared INTERNAL_TOKEN; the servers its callers' digests", () => {
    // Digests present nothing, so a server may know one more than it serves; a token is never anyone else's.
    const tokens = variables().filter((n) => n.startsWith("INTERNAL_TOKEN") && !n.endsWith("_SHA256"));
    expect(tokens).toEqual(OWN_TOKEN[service] ? [OWN_TOKEN[service]!] : []);
    const digests = variables().filter((n) => n.endsWith("_SHA256"));
    expect(digests).toEqual(expect.arrayContaining(CALLER_DIGESTS[service]));
    if (CALLER_DIGESTS[service].length === 0) expect(digests).toEqual([]);
  });

  test("Kubernetes: internal hops over TLS; only the servers mount the key", () => {
    const env = named("ConfigMap", "tron-webhooks-env")!.data as Record<string, string>;
    expect(env.REGISTRY_URL).toStartWith("https://");
    expect(env.DELIVERER_URL).toStartWith("https://");
    expect(env.INTERNAL_TLS_CA_FILE).toBeDefined();
    const tls = (pod.volumes as Doc[]).find((v) => v.secret?.secretName === "tron-webhooks-internal-tls")!;
    expect(tls).toBeDefined();
    const server = service === "registry" || service === "deliverer";
    if (server) {
      expect(tls.secret.items).toBeUndefined();
      expect(variables()).toEqual(expect.arrayContaining(["INTERNAL_TLS_CERT_FILE", "INTERNAL_TLS_KEY_FILE"]));
      expect(container.readinessProbe.httpGet.scheme).toBe("HTTPS");
      expect(container.livenessProbe.httpGet.scheme).toBe("HTTPS");
    } else {
      expect(tls.secret.items).toEqual([{ key: "ca.crt", path: "ca.crt" }]);
    }
  });

  test("compose: its own token and its callers' digests, no shared INTERNAL_TOKEN", () => {
    const compose = Bun.YAML.parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8")) as Doc;
    const environment = compose.services[service].environment as Record<string, string>;
    const required = Object.keys(environment).filter((n) => n.startsWith("INTERNAL_TOKEN") && environment[n]!.includes(":?"));
    expect(required.sort()).toEqual([...(OWN_TOKEN[service] ? [OWN_TOKEN[service]!] : []), ...CALLER_DIGESTS[service]].sort());
    expect(environment.INTERNAL_TOKEN).toBeUndefined();
    const tokens = Object.keys(environment).filter((n) => /^INTERNAL_TOKEN_[A-Z]+$/.test(n));
    expect(tokens).toEqual(OWN_TOKEN[service] ? [OWN_TOKEN[service]!] : []);
  });
});
