// A TCP proxy (Bun.listen/Bun.connect) between a service and the real PostgreSQL, so a test can take the database
// away without touching the shared server:
//   refuse()    every connection closed and nothing listening (connection refused)
//   blackhole() connections closed; new ones accepted but never answered
//   freeze()    open connections stay up but carry no more bytes (a dead path, no reset)
//   mute()      bytes still flow to the upstream, but nothing comes back (a request lands, its answer is lost)
//   restore()   forwarding again on the same port (frozen and muted connections are reset first, as TCP eventually would)
//   retarget()  every connection cut; new ones go to another upstream (a failover behind a fixed address)
import type { Socket, TCPSocketListener } from "bun";

type Mode = "forward" | "blackhole" | "freeze" | "mute";

interface Pipe {
  peer: Socket<Pipe> | undefined;
  /** Bytes waiting for the socket to accept them (backpressure) or for the upstream to connect. */
  queue: Uint8Array[];
}

export interface TcpProxy {
  port: number;
  refuse(): Promise<void>;
  blackhole(): void;
  freeze(): void;
  mute(): void;
  restore(): Promise<void>;
  retarget(target: { hostname: string; port: number }): void;
  close(): Promise<void>;
}

function flush(socket: Socket<Pipe>): void {
  const q = socket.data.queue;
  while (q.length > 0) {
    const chunk = q[0]!;
    const written = socket.write(chunk);
    if (written < chunk.byteLength) {
      q[0] = chunk.subarray(Math.max(0, written));
      return;
    }
    q.shift();
  }
}

function send(socket: Socket<Pipe> | undefined, data: Uint8Array, pending: Uint8Array[]): void {
  if (!socket) {
    pending.push(data.slice());
    return;
  }
  socket.data.queue.push(data.slice());
  flush(socket);
}

export async function startTcpProxy(initial: { hostname: string; port: number } = { hostname: "127.0.0.1", port: 5432 }): Promise<TcpProxy> {
  let target = initial;
  let mode: Mode = "forward";
  const sockets = new Set<Socket<Pipe>>();
  const resetAll = () => {
    for (const s of sockets) s.terminate();
    sockets.clear();
  };

  const listen = (port: number): TCPSocketListener<Pipe> =>
    Bun.listen<Pipe>({
      hostname: "127.0.0.1",
      port,
      socket: {
        open(client) {
          client.data = { peer: undefined, queue: [] };
          sockets.add(client);
          if (mode !== "forward") return;
          const early: Uint8Array[] = [];
          client.data.queue = early;
          void Bun.connect<Pipe>({
            hostname: target.hostname,
            port: target.port,
            data: { peer: client, queue: [] },
            socket: {
              open(upstream) {
                sockets.add(upstream);
                client.data.peer = upstream;
                // Whatever the client sent before the upstream was up goes first.
                upstream.data.queue.push(...early.splice(0));
                client.data.queue = [];
                flush(upstream);
              },
              data(upstream, bytes) {
                if (mode === "forward") send(upstream.data.peer, bytes, []);
              },
              drain(upstream) {
                flush(upstream);
              },
              close(upstream) {
                sockets.delete(upstream);
                upstream.data.peer?.end();
              },
              error() {},
            },
          }).catch(() => client.end());
        },
        data(client, bytes) {
          if (mode !== "forward" && mode !== "mute") return;
          if (client.data.peer) send(client.data.peer, bytes, []);
          else client.data.queue.push(bytes.slice());
        },
        drain(client) {
          if (client.data.peer) flush(client);
        },
        close(client) {
          sockets.delete(client);
          client.data.peer?.end();
        },
        error() {},
      },
    });

  let server: TCPSocketListener<Pipe> | undefined = listen(0);
  const port = server.port;

  return {
    port,
    async refuse() {
      server?.stop(true);
      server = undefined;
      resetAll();
    },
    blackhole() {
      mode = "blackhole";
      resetAll();
    },
    freeze() {
      mode = "freeze";
    },
    mute() {
      mode = "mute";
    },
    async restore() {
      if (mode === "freeze" || mode === "mute") resetAll();
      mode = "forward";
      server ??= listen(port);
    },
    retarget(next) {
      target = next;
      resetAll();
    },
    async close() {
      server?.stop(true);
      server = undefined;
      resetAll();
    },
  };
}
