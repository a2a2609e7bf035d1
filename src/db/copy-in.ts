import type pg from 'pg';

/** What pg hands a custom query: the wire connection, whose socket COPY writes to. */
interface CopyConnection {
  stream: { writable: boolean; cork(): void; uncork(): void; write(chunk: Buffer): boolean };
}

const COPY_DONE = Buffer.from([0x63 /* c */, 0, 0, 0, 4]);

/**
 * A simple-protocol Query message: 'Q', its length, the text and a NUL. Built per call: a few hundred bytes
 * once per flush, where a cache keyed by text would grow with every statement an embedder passes to copyIn.
 */
function queryMessage(text: string): Buffer {
  const body = Buffer.byteLength(text);
  const m = Buffer.allocUnsafe(1 + 4 + body + 1);
  m[0] = 0x51; // Q
  m.writeInt32BE(4 + body + 1, 1);
  m.write(text, 5, 'utf8');
  m[5 + body] = 0;
  return m;
}

/**
 * `COPY … FROM STDIN` with the whole input already in hand, as a custom query for
 * pg (its Submittable): the statement, one CopyData message and CopyDone. A stream
 * (pg-copy-streams) is for input that does not fit in memory; a flush's rows
 * always do, and are one buffer already.
 *
 * `text` may hold statements after the COPY (simple-query protocol): they run in
 * the same implicit transaction, so a NOTIFY behind it is sent only if the rows
 * commit. Resolves with the number of rows COPY wrote.
 */
class CopyIn {
  private rows = 0;
  private failed = false;

  constructor(
    readonly text: string,
    private readonly data: Buffer,
    // pg wraps this to apply query_timeout, so it must exist before the query is passed to client.query.
    public callback: (err: Error | null, rows: number) => void,
  ) {}

  /**
   * The data goes out with the statement, not after Postgres's CopyInResponse: waiting for it cost a
   * round trip per flush, two more wake-ups on a busy machine, and with one flush in flight a lower
   * rate. The protocol allows it: if the COPY fails before reading them, Postgres drops the CopyData
   * and CopyDone that follow (protocol, "COPY Operations").
   */
  submit(connection: CopyConnection): void {
    const socket = connection.stream;
    if (!socket.writable) return;
    const head = Buffer.allocUnsafe(5);
    head[0] = 0x64; // d: CopyData
    head.writeInt32BE(4 + this.data.length, 1);
    // One write for the four pieces, the data not copied (pg's own copyData message copies it twice).
    socket.cork();
    socket.write(queryMessage(this.text));
    socket.write(head);
    socket.write(this.data);
    socket.write(COPY_DONE);
    socket.uncork();
  }

  handleCopyInResponse(): void {}

  handleCommandComplete(msg: { text?: string }): void {
    const m = /^COPY (\d+)$/.exec(msg.text ?? '');
    if (m) this.rows = Number(m[1]);
  }

  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}

  handleError(err: Error): void {
    this.failed = true;
    this.callback(err, 0);
  }

  handleReadyForQuery(): void {
    if (!this.failed) this.callback(null, this.rows);
  }
}

export function copyIn(client: pg.ClientBase, text: string, data: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    client.query(new CopyIn(text, data, (err, rows) => (err ? reject(err) : resolve(rows))) as unknown as pg.Submittable);
  });
}
