// Types for cluster-key-slot (the CRC16 key-to-slot function ioredis itself uses), which ships none.
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0..16383) of a key, honouring {hash tags}. */
  export default function calculateSlot(key: string | Buffer): number;
}
