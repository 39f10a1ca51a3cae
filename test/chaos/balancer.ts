// A TCP balancer on loopback, standing in for a Kubernetes Service in front of replicas: each new connection goes to
// the next target in turn, and to the one after when a target refuses (a replica killed and not back yet). The
// targets can be replaced (a Redis failover repoints the services at the promoted replica) and every open
// connection cut at once, as a failover or a load balancer's health check would.
import type { Socket, TCPSocketListener } from "bun";

interface Pipe {
  peer: Socket<Pipe> | undefined;
  /** Bytes waiting for the socket to accept them (backpressure) or for the upstream to connect. */
  queue: Uint8Array[];
}

export interface Balancer {
  port: number;
  setTargets(ports: number[]): void;
  /** Closes every open connection (clients reconnect, to the current targets). */
  cutAll(): void;
  close(): void;
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

function send(socket: Socket<Pipe>, data: Uint8Array): void {
  socket.data.queue.push(data.slice());
  flush(socket);
}

export function startBalancer(initial: number[]): Balancer {
  let targets = [...initial];
  let next = 0;
  const sockets = new Set<Socket<Pipe>>();

  const connect = (client: Socket<Pipe>, tries: number): void => {
    if (tries <= 0 || targets.length === 0) {
      client.end();
      return;
    }
    const port = targets[next++ % targets.length]!;
    void Bun.connect<Pipe>({
      hostname: "127.0.0.1",
      port,
      data: { peer: client, queue: [] },
      socket: {
        open(upstream) {
          if (!sockets.has(client)) {
            upstream.end();
            return;
          }
          sockets.add(upstream);
          client.data.peer = upstream;
          // Whatever the client sent before the upstream was up goes first.
          upstream.data.queue.push(...client.data.queue.splice(0));
          flush(upstream);
        },
        data(upstream, bytes) {
          send(client, bytes);
        },
        drain(upstream) {
          flush(upstream);
        },
        close(upstream) {
          sockets.delete(upstream);
          client.end();
        },
        error() {},
      },
    }).catch(() => connect(client, tries - 1));
  };

  const server: TCPSocketListener<Pipe> = Bun.listen<Pipe>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      open(client) {
        client.data = { peer: undefined, queue: [] };
        sockets.add(client);
        connect(client, targets.length);
      },
      data(client, bytes) {
        if (client.data.peer) send(client.data.peer, bytes);
        else client.data.queue.push(bytes.slice());
      },
      drain(client) {
        flush(client);
      },
      close(client) {
        sockets.delete(client);
        client.data.peer?.end();
      },
      error() {},
    },
  });

  const cutAll = () => {
    for (const s of sockets) s.terminate();
    sockets.clear();
  };
  return {
    port: server.port,
    setTargets(ports) {
      targets = [...ports];
    },
    cutAll,
    close() {
      server.stop(true);
      cutAll();
    },
  };
}
