#!/usr/bin/env node
// Thin launcher: the CLI is compiled to dist/ by `npm run build` (run automatically by `npm ci`).
import('../dist/cli/main.js')
  .then((m) => m.main(process.argv, process.env))
  .catch((err) => {
    if (err && err.code === 'ERR_MODULE_NOT_FOUND' && String(err.message).includes('dist/cli/main.js')) {
      console.error('postroom: the compiled CLI is missing. Run `npm run build` (or `npm ci`) first.');
    } else {
      console.error(err);
    }
    process.exitCode = 1;
  });
