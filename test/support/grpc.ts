// Plain gRPC calls for tests, the way any gRPC client makes them: @grpc/grpc-js over HTTP/2 (no Connect code on the
// client side), /package.Service/Method, protobuf bodies encoded with the generated schemas, and the internal token
// as `authorization` metadata when given.
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";

/** A client of a served gRPC port (cleartext HTTP/2 on 127.0.0.1). */
export function grpcClient(server: { address(): unknown }): grpc.Client {
  const address = server.address() as { port: number } | string | null;
  if (address === null || typeof address === "string") throw new Error("gRPC server has no TCP address");
  return new grpc.Client(`127.0.0.1:${address.port}`, grpc.credentials.createInsecure());
}

/** `authorization: Bearer <token>` metadata; no token gives empty metadata. */
export function bearerMetadata(token: string | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set("authorization", `Bearer ${token}`);
  return metadata;
}

/** One unary call; rejects with the grpc.ServiceError the server's status gave. */
export function grpcUnary<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  service: { typeName: string },
  method: string,
  schemas: { input: I; output: O },
  message: MessageInitShape<I>,
  token: string | undefined,
): Promise<MessageShape<O>> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      `/${service.typeName}/${method}`,
      (m: MessageShape<I>) => Buffer.from(toBinary(schemas.input, m)),
      (b: Buffer) => fromBinary(schemas.output, b),
      create(schemas.input, message),
      bearerMetadata(token),
      (err: grpc.ServiceError | null, value?: MessageShape<O>) => (err ? reject(err) : resolve(value!)),
    );
  });
}
