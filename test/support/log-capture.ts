import { Writable } from 'node:stream';

/** A destination for createLogger that keeps every line, to search. */
export function captureLog(): {
  stream: Writable;
  lines(): Array<{ level: number; msg?: string } & Record<string, unknown>>;
  text(): string;
  mark(): () => string;
} {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      chunks.push(String(chunk));
      cb();
    },
  });
  const text = (): string => chunks.join('');
  return {
    stream,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { level: number; msg?: string }),
    /** What was logged after this call. */
    mark() {
      const at = text().length;
      return () => text().slice(at);
    },
  };
}
