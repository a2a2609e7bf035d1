import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One request written byte for byte on a fresh socket: clients such as undici
 * refuse or normalise the malformed targets and headers hostile senders use.
 */
export function rawRequest(
  base: string,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  const u = new URL(base);
  const body = options.body ?? '';
  const head = [`${method} ${target} HTTP/1.1`, `Host: ${u.host}`, 'Connection: close'];
  for (const [k, v] of Object.entries(options.headers ?? {})) head.push(`${k}: ${v}`);
  if (
    method !== 'GET' &&
    method !== 'HEAD' &&
    !Object.keys(options.headers ?? {}).some((k) => k.toLowerCase() === 'content-length' || k.toLowerCase() === 'transfer-encoding')
  ) {
    head.push(`Content-Length: ${Buffer.byteLength(body)}`);
  }
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), u.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})[^\r\n]*\r\n([\s\S]*?)\r\n\r\n([\s\S]*)$/.exec(text);
      if (!m) {
        resolve({ status: 0, headers: {}, body: text });
        return;
      }
      const headers: Record<string, string> = {};
      for (const line of m[2]!.split('\r\n')) {
        const i = line.indexOf(':');
        if (i > 0) headers[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      resolve({ status: Number(m[1]), headers, body: m[3]! });
    });
    socket.write(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
}

/** The error code of a JSON error answer, or undefined. */
export function errorCode(res: RawResponse): string | undefined {
  try {
    return (JSON.parse(res.body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}
