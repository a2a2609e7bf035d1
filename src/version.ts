import { createRequire } from 'node:module';

/** The package version, read once from package.json (two levels up from src/ and dist/ alike). */
export const VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version;
