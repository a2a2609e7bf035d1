/** A browser-less client for the console: keeps its session cookie and reads each form's CSRF token. */
export interface ConsoleClient {
  base: string;
  cookie: string | undefined;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  post(path: string, form: Record<string, string>, headers?: Record<string, string>): Promise<Response>;
  /** The CSRF token of the forms on a page (every form of a session carries the same). */
  csrf(path?: string): Promise<string>;
  login(token: string): Promise<Response>;
}

export function consoleClient(base: string): ConsoleClient {
  const client: ConsoleClient = {
    base,
    cookie: undefined,
    async get(path, headers = {}) {
      const res = await fetch(`${base}${path}`, {
        redirect: 'manual',
        headers: { ...(client.cookie ? { cookie: client.cookie } : {}), ...headers },
      });
      keep(res);
      return res;
    },
    async post(path, form, headers = {}) {
      const res = await fetch(`${base}${path}`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(client.cookie ? { cookie: client.cookie } : {}), ...headers },
        body: new URLSearchParams(form).toString(),
      });
      keep(res);
      return res;
    },
    async csrf(path = '/console') {
      const html = await (await client.get(path)).text();
      const m = /name="_csrf" value="([^"]+)"/.exec(html);
      if (!m) throw new Error(`no CSRF token on ${path}`);
      return m[1]!;
    },
    login(token) {
      return client.post('/console/login', { token });
    },
  };
  const keep = (res: Response): void => {
    const set = res.headers.get('set-cookie');
    if (!set) return;
    const value = set.split(';')[0]!;
    client.cookie = value.endsWith('=') ? undefined : value;
  };
  return client;
}
