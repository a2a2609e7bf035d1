/**
 * The only module that touches process.env. Everything else receives a parsed
 * `Config` (or the raw record, for `loadConfig`) so tests can inject settings.
 */
export type Env = Readonly<Record<string, string | undefined>>;
