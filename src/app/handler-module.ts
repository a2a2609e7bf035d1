import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, PostroomError } from '../errors.js';
import type { HandlerMap } from '../events/handlers.js';
import { SAMPLE_EVENT_TYPE } from '../events/sample.js';
import type { Postroom } from './postroom.js';

/**
 * Loads `postroom serve --handlers ./handlers.js`. The module's default export
 * is either a handler map keyed by event type (as createPostroom's `handlers`)
 * or a function that receives the postroom instance (to call on / onUnknown /
 * onEvery, possibly after async set-up):
 *
 *   export default { [type]: async (event, ctx) => { … } };
 *   export default async (postroom) => { postroom.on(type, …) };
 */
export async function loadHandlerModule<Api>(specifier: string, postroom: Postroom<Api>, cwd: string): Promise<string> {
  const resolved = path.resolve(cwd, specifier);
  if (!fs.existsSync(resolved)) throw new ConfigError('--handlers', `no file at ${resolved}`);
  let mod: { default?: unknown };
  try {
    mod = (await import(pathToFileURL(resolved).href)) as { default?: unknown };
  } catch (err) {
    throw new PostroomError('handlers_module_failed', `--handlers: could not load ${resolved}: ${(err as Error).message}`, { cause: err });
  }
  const exported = mod.default;
  if (typeof exported === 'function') {
    await (exported as (p: Postroom<Api>) => unknown)(postroom);
  } else if (typeof exported === 'object' && exported !== null) {
    postroom.use(exported as HandlerMap<Api>);
  } else {
    throw new ConfigError(
      '--handlers',
      `${resolved} must have a default export: a handler map ({ '${SAMPLE_EVENT_TYPE}': async (event, ctx) => {…} }) or a function (postroom) => { postroom.on(…) }`,
    );
  }
  return resolved;
}
