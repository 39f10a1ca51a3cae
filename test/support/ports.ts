/** Ports the OS says are free right now (bound and released), for services a test starts as separate processes. */
export function freePorts(n: number): number[] {
  const servers = Array.from({ length: n }, () => Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } }));
  const ports = servers.map((s) => s.port);
  for (const s of servers) s.stop(true);
  return ports;
}
