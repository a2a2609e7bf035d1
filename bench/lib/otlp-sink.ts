import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OTLP/HTTP endpoint that takes every export and answers 200 without decoding it: what a receiver pays to
 * trace is its own CPU (spans, batching, encoding, sending), not the collector's.
 */
export async function startOtlpSink(): Promise<{ url: string; requests(): number; bytes(): number; close(): Promise<void> }> {
  let requests = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    bytes: () => bytes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
