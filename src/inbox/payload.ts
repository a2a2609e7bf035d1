/**
 * An event's parsed body. Rows written since migration 007 keep the signed bytes
 * once (raw_body) and leave payload NULL; older rows, and rows written without
 * raw bytes, have payload. Never throws: bytes that do not parse give null, which
 * the worker's validation turns into a quarantine with a reason. A quarantined
 * row has no payload (its bytes are not a valid event; replay re-parses them).
 */
export function payloadOf(row: { payload: unknown; raw_body?: Uint8Array | null | undefined; status?: string }): unknown {
  if (row.payload !== null && row.payload !== undefined) return row.payload;
  if (row.status === 'quarantined') return null;
  if (!row.raw_body) return null;
  try {
    return JSON.parse(Buffer.from(row.raw_body.buffer, row.raw_body.byteOffset, row.raw_body.byteLength).toString('utf8')) as unknown;
  } catch {
    return null;
  }
}
