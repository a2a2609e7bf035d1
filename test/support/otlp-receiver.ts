import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real OTLP/HTTP trace endpoint for tests: `POST /v1/traces` with a body in either encoding the
 * specification defines (application/x-protobuf or application/json), answered as a collector would.
 * It decodes what arrives into plain spans; it knows nothing of postroom.
 */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: Array<{ traceId: string; spanId: string }>;
  resource: Record<string, string | number | boolean>;
}

export interface OtlpReceiver {
  url: string;
  spans: ReceivedSpan[];
  contentTypes: Set<string>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      contentTypes.add(type);
      try {
        spans.push(...(type === 'application/json' ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
        return;
      }
      // An empty ExportTraceServiceResponse, in the request's encoding.
      if (type === 'application/json') res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    contentTypes,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// ---------------------------------------------------------------- JSON (OTLP/HTTP JSON: ids as hex strings)
interface JsonKeyValue {
  key: string;
  value: Record<string, unknown>;
}

function jsonValue(v: Record<string, unknown>): string | number | boolean {
  if ('stringValue' in v) return v.stringValue as string;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return Number(v.doubleValue);
  if ('boolValue' in v) return Boolean(v.boolValue);
  return JSON.stringify(v);
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
}

function fromJson(data: {
  resourceSpans?: Array<{
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind?: number;
        attributes?: JsonKeyValue[];
        links?: Array<{ traceId: string; spanId: string }>;
      }>;
    }>;
  }>;
}): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of data.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind ?? 0,
          attributes: jsonAttributes(s.attributes),
          links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          resource,
        });
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- protobuf (the wire format, read by hand)
type Field = { n: number; wire: number; value: bigint | Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const n = key >> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ n, wire, value: varint() });
    else if (wire === 1) {
      out.push({ n, wire, value: buf.readBigUInt64LE(i) });
      i += 8;
    } else if (wire === 2) {
      const len = Number(varint());
      out.push({ n, wire, value: buf.subarray(i, i + len) });
      i += len;
    } else if (wire === 5) {
      out.push({ n, wire, value: BigInt(buf.readUInt32LE(i)) });
      i += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const bytesOf = (fs: Field[], n: number): Buffer[] => fs.filter((f) => f.n === n && f.wire === 2).map((f) => f.value as Buffer);
const hex = (fs: Field[], n: number): string => bytesOf(fs, n)[0]?.toString('hex') ?? '';

function anyValue(buf: Buffer): string | number | boolean {
  const f = fields(buf)[0];
  if (!f) return '';
  if (f.n === 1) return (f.value as Buffer).toString('utf8');
  if (f.n === 2) return (f.value as bigint) !== 0n;
  if (f.n === 3) return Number(BigInt.asIntN(64, f.value as bigint));
  if (f.n === 4) {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(f.value as bigint);
    return b.readDoubleLE(0);
  }
  return `<${f.n}>`;
}

function pbAttributes(list: Buffer[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const fs = fields(kv);
    out[bytesOf(fs, 1)[0]?.toString('utf8') ?? ''] = anyValue(bytesOf(fs, 2)[0] ?? Buffer.alloc(0));
  }
  return out;
}

/** ExportTraceServiceRequest: resource_spans(1) → resource(1), scope_spans(2) → spans(2). */
function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of bytesOf(fields(body), 1)) {
    const rsf = fields(rs);
    const resource = pbAttributes(bytesOf(fields(bytesOf(rsf, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const ss of bytesOf(rsf, 2)) {
      for (const s of bytesOf(fields(ss), 2)) {
        const sf = fields(s);
        out.push({
          traceId: hex(sf, 1),
          spanId: hex(sf, 2),
          parentSpanId: hex(sf, 4),
          name: bytesOf(sf, 5)[0]?.toString('utf8') ?? '',
          kind: Number(sf.find((f) => f.n === 6)?.value ?? 0),
          attributes: pbAttributes(bytesOf(sf, 9)),
          links: bytesOf(sf, 13).map((l) => {
            const lf = fields(l);
            return { traceId: hex(lf, 1), spanId: hex(lf, 2) };
          }),
          resource,
        });
      }
    }
  }
  return out;
}
