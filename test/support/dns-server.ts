// A DNS server on loopback for tests of the system resolver: answers A and AAAA queries from a table the test can
// change between lookups, with the TTL it is given; a name without records of a type gets an empty NOERROR answer
// with an SOA (the form a negative answer's TTL is taken from, RFC 2308). Only what those tests need: one question
// per query, IN class, UDP.
import { createSocket, type Socket } from "node:dgram";
import ipaddr from "ipaddr.js";

const TYPE_A = 1;
const TYPE_SOA = 6;
const TYPE_AAAA = 28;
const CLASS_IN = 1;
const NAME_POINTER = 0xc00c; // the question's name, at offset 12

export interface DnsRecords {
  a?: string[];
  aaaa?: string[];
}

export interface TestDnsServer {
  /** "127.0.0.1:port", for createSystemResolver({ servers }). */
  address: string;
  /** Records per name (lower case, no trailing dot); changed freely between lookups. */
  records: Map<string, DnsRecords>;
  /** Queries received, as "A name" / "AAAA name". */
  queries: string[];
  close(): void;
}

function record(type: number, ttl: number, rdata: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(NAME_POINTER, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(CLASS_IN, 4);
  head.writeUInt32BE(ttl, 6);
  head.writeUInt16BE(rdata.length, 10);
  return Buffer.concat([head, rdata]);
}

function soa(ttl: number): Buffer {
  // mname "ns.", rname "h.", then serial, refresh, retry, expire and the negative-caching minimum.
  const numbers = Buffer.alloc(20);
  [1, ttl, ttl, ttl, ttl].forEach((n, i) => numbers.writeUInt32BE(n, i * 4));
  return record(TYPE_SOA, ttl, Buffer.concat([Buffer.from([2, 0x6e, 0x73, 0]), Buffer.from([1, 0x68, 0]), numbers]));
}

export async function startDnsServer(opts: { ttl?: number } = {}): Promise<TestDnsServer> {
  const ttl = opts.ttl ?? 1;
  const socket: Socket = createSocket("udp4");
  const records = new Map<string, DnsRecords>();
  const queries: string[] = [];
  socket.on("message", (msg, peer) => {
    const labels: string[] = [];
    let i = 12;
    while (msg[i] !== 0) {
      labels.push(msg.subarray(i + 1, i + 1 + msg[i]!).toString("latin1"));
      i += msg[i]! + 1;
    }
    const type = msg.readUInt16BE(i + 1);
    const question = msg.subarray(12, i + 5);
    const name = labels.join(".").toLowerCase();
    queries.push(`${type === TYPE_AAAA ? "AAAA" : type === TYPE_A ? "A" : type} ${name}`);
    const entry = records.get(name) ?? {};
    const list = type === TYPE_A ? (entry.a ?? []) : type === TYPE_AAAA ? (entry.aaaa ?? []) : [];
    const answers = list.map((ip) => record(type, ttl, Buffer.from(ipaddr.parse(ip).toByteArray())));
    const authority = answers.length === 0 ? [soa(ttl)] : [];
    const header = Buffer.alloc(12);
    header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
    header.writeUInt16BE(0x8180, 2); // response, recursion desired and available, NOERROR
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    header.writeUInt16BE(authority.length, 8);
    socket.send(Buffer.concat([header, question, ...answers, ...authority]), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { address: `127.0.0.1:${socket.address().port}`, records, queries, close: () => socket.close() };
}
