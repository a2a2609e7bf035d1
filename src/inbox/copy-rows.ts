import { newInstantFields, readInstant } from '../events/calendar.js';

/**
 * Inbox rows in Postgres's binary COPY format: each value as its length and its
 * bytes, with no text to escape on our side or to parse on Postgres's. The signed
 * body goes in as it arrived.
 *
 * Only what can be written exactly goes this way: a row whose timestamp falls
 * outside what timestampMicros converts makes encodeCopyRows answer undefined, and
 * the caller inserts those rows with the statement that lets Postgres read the text.
 */

/** One row as COPY_COLUMNS lists them; strings as they are to be stored. */
export interface CopyRow {
  eventId: string;
  type: string;
  occurredAt: string | null;
  rawBody: Uint8Array;
  signatureHeader: string | null;
  headersJson: string | null;
  contentType: string | null;
  userAgent: string | null;
  endpointId: string | null;
  source: string;
  correspondenceId: string | null;
  secretIndex: number | null;
  status: string;
  /** The W3C traceparent the row was delivered in (migrations/028); absent or null when tracing is off. */
  traceContext?: string | null;
}

export const COPY_COLUMNS =
  'event_id, type, occurred_at, raw_body, signature_header, headers, delivery_content_type, delivery_user_agent, ' +
  'endpoint_id, source, correspondence_id, secret_index, status';
/**
 * With a trace context (migrations/028) on some row of the flush: only then is the column written, so that
 * with tracing off the COPY is the same as on a store without the column.
 */
export const COPY_COLUMNS_TRACED = `${COPY_COLUMNS}, trace_context`;
const FIELDS = 13;

const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');
// Signature, flags (int32 0), header extension length (int32 0).
const HEADER_BYTES = SIGNATURE.length + 8;
const EPOCH_2000_MS = Date.UTC(2000, 0, 1);
const TWO_32 = 4294967296;
const fields = newInstantFields();
/**
 * Microseconds since 2000-01-01 UTC, timestamptz's binary value, for an instant
 * readInstant accepts in the years 1970 to 2199 with at most six fraction digits;
 * undefined for anything else, which Postgres then reads from text itself.
 * Fractions longer than microseconds are left to Postgres because it rounds them
 * (rint) as JavaScript cannot be trusted to repeat; years past 2199 would leave
 * the range where a double holds every microsecond.
 */
export function timestampMicros(at: string): number | undefined {
  if (!readInstant(at, fields)) return undefined;
  const { year, month, day, hour, minute, second, fractionDigits, fraction, offsetMinutes } = fields;
  if (year < 1970 || year > 2199 || fractionDigits > 6) return undefined;
  const micros = fractionDigits === 0 ? 0 : fraction * 10 ** (6 - fractionDigits);
  const ms = Date.UTC(year, month - 1, day, hour, minute, second) - offsetMinutes * 60_000;
  return (ms - EPOCH_2000_MS) * 1000 + micros;
}

/** The whole COPY input for these rows, or undefined when one of them must be inserted from text. */
export function encodeCopyRows(rows: readonly CopyRow[], traced = false): Buffer | undefined {
  const fieldCount = traced ? FIELDS + 1 : FIELDS;
  const micros: number[] = new Array<number>(rows.length);
  // A UTF-16 code unit never takes more than 3 bytes of UTF-8.
  let capacity = HEADER_BYTES + 2;
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    if (row.occurredAt !== null) {
      const m = timestampMicros(row.occurredAt);
      if (m === undefined) return undefined;
      micros[r] = m;
    }
    if (row.secretIndex !== null && !(Number.isInteger(row.secretIndex) && row.secretIndex >= -32768 && row.secretIndex <= 32767)) {
      return undefined;
    }
    capacity +=
      2 +
      4 * fieldCount +
      8 +
      2 +
      row.rawBody.length +
      3 *
        (row.eventId.length +
          row.type.length +
          (row.signatureHeader?.length ?? 0) +
          (row.headersJson?.length ?? 0) +
          1 +
          (row.contentType?.length ?? 0) +
          (row.userAgent?.length ?? 0) +
          (row.endpointId?.length ?? 0) +
          row.source.length +
          (row.correspondenceId?.length ?? 0) +
          row.status.length +
          (row.traceContext?.length ?? 0));
  }
  const buf = Buffer.allocUnsafe(capacity);
  let at = SIGNATURE.copy(buf, 0);
  at = buf.writeInt32BE(0, at);
  at = buf.writeInt32BE(0, at);
  // Byte by byte while the text is ASCII, as ids, types and signatures are: a Buffer.write per value
  // crosses into C++ thirteen times a row, which cost more than the array literals it replaces.
  const text = (s: string | null): void => {
    if (s === null) {
      at = buf.writeInt32BE(-1, at);
      return;
    }
    const start = at + 4;
    const length = s.length;
    let i = 0;
    for (; i < length; i++) {
      const c = s.charCodeAt(i);
      if (c > 127) break;
      buf[start + i] = c;
    }
    const n = i === length ? length : buf.write(s, start, 'utf8');
    buf.writeInt32BE(n, at);
    at = start + n;
  };
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    at = buf.writeInt16BE(fieldCount, at);
    text(row.eventId);
    text(row.type);
    if (row.occurredAt === null) {
      at = buf.writeInt32BE(-1, at);
    } else {
      const m = micros[r]!;
      const hi = Math.floor(m / TWO_32);
      at = buf.writeInt32BE(8, at);
      at = buf.writeInt32BE(hi, at);
      at = buf.writeUInt32BE(m - hi * TWO_32, at);
    }
    at = buf.writeInt32BE(row.rawBody.length, at);
    buf.set(row.rawBody, at);
    at += row.rawBody.length;
    text(row.signatureHeader);
    if (row.headersJson === null) {
      at = buf.writeInt32BE(-1, at);
    } else {
      // jsonb's binary form: a version byte (1), then the JSON text.
      const n = buf.write(row.headersJson, at + 5, 'utf8');
      buf.writeInt32BE(n + 1, at);
      buf[at + 4] = 1;
      at += 5 + n;
    }
    text(row.contentType);
    text(row.userAgent);
    text(row.endpointId);
    text(row.source);
    text(row.correspondenceId);
    if (row.secretIndex === null) {
      at = buf.writeInt32BE(-1, at);
    } else {
      at = buf.writeInt32BE(2, at);
      at = buf.writeInt16BE(row.secretIndex, at);
    }
    text(row.status);
    if (traced) text(row.traceContext ?? null);
  }
  at = buf.writeInt16BE(-1, at);
  return buf.subarray(0, at);
}
