/** Every link the console makes: paths under /console with data encoded, so a view's URL can be pasted into a chat. */
export const BASE = '/console';

/** encodeURIComponent, which throws on an unpaired surrogate: such a character (which no stored id can hold) becomes U+FFFD. */
const enc = (value: string): string =>
  encodeURIComponent(value.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD'));

export function withQuery(path: string, query: Record<string, string | number | undefined | null>): string {
  const parts = Object.entries(query)
    .filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== null && e[1] !== '')
    .map(([k, v]) => `${enc(k)}=${enc(String(v))}`);
  return parts.length ? `${path}?${parts.join('&')}` : path;
}

export const urls = {
  overview: () => BASE,
  login: (next?: string) => withQuery(`${BASE}/login`, { next }),
  logout: () => `${BASE}/logout`,
  inbox: (q: Record<string, string | number | undefined | null> = {}) => withQuery(`${BASE}/inbox`, q),
  event: (id: string) => `${BASE}/events/${enc(id)}`,
  eventAction: (id: string, action: 'replay' | 'reveal') => `${BASE}/events/${enc(id)}/${action}`,
  correspondence: (id: string) => `${BASE}/correspondence/${enc(id)}`,
  gaps: (q: Record<string, string | number | undefined | null> = {}) => withQuery(`${BASE}/gaps`, q),
  gap: (id: number | string) => `${BASE}/gaps/${enc(String(id))}`,
  ignoreGap: (id: number | string) => `${BASE}/gaps/${enc(String(id))}/ignore`,
  runs: (q: Record<string, string | number | undefined | null> = {}) => withQuery(`${BASE}/runs`, q),
  run: (id: number | string) => `${BASE}/runs/${enc(String(id))}`,
  reconcile: () => `${BASE}/reconcile`,
  replay: (q: Record<string, string | number | undefined | null> = {}) => withQuery(`${BASE}/replay`, q),
  audit: (q: Record<string, string | number | undefined | null> = {}) => withQuery(`${BASE}/audit`, q),
  find: () => `${BASE}/find`,
  asset: (name: 'console.css' | 'console.js', version: string) => withQuery(`${BASE}/static/${name}`, { v: version }),
};
