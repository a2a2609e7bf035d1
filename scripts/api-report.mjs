#!/usr/bin/env node
// The public API surface, checked in: etc/postroom.api.md (the `postroom` entry point),
// etc/postroom-service.api.md (`postroom/service`) and etc/postroom-sandbox.api.md
// (`postroom/sandbox`), written by API Extractor from
// the declarations tsc emits. `npm run lint` runs this in check mode and fails when
// the surface changed without the report; `npm run api:update` rewrites the reports.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const update = process.argv.includes('--update');
// Beside the sources, not under node_modules: API Extractor treats anything there as another package.
const work = fs.mkdtempSync(path.join(root, '.api-report-'));
const dts = path.join(work, 'dts');

const ENTRIES = [
  { entry: 'index.d.ts', report: 'postroom.api.md' },
  { entry: 'service.d.ts', report: 'postroom-service.api.md' },
  { entry: 'sandbox/index.d.ts', report: 'postroom-sandbox.api.md' },
];

let failed = false;
try {
  execFileSync(
    process.execPath,
    [
      path.join(root, 'node_modules/typescript/bin/tsc'),
      '-p',
      path.join(root, 'tsconfig.build.json'),
      '--emitDeclarationOnly',
      '--declarationMap',
      'false',
      '--sourceMap',
      'false',
      '--outDir',
      dts,
    ],
    {
      stdio: 'inherit',
    },
  );
  for (const { entry, report } of ENTRIES) {
    const config = ExtractorConfig.prepare({
      configObject: {
        projectFolder: root,
        mainEntryPointFilePath: path.join(dts, entry),
        compiler: { tsconfigFilePath: path.join(root, 'tsconfig.build.json') },
        apiReport: { enabled: true, reportFileName: report, reportFolder: path.join(root, 'etc'), reportTempFolder: work },
        docModel: { enabled: false },
        dtsRollup: { enabled: false },
        tsdocMetadata: { enabled: false },
        messages: {
          compilerMessageReporting: { default: { logLevel: 'warning' } },
          extractorMessageReporting: {
            default: { logLevel: 'none' },
            // A public signature that names a type the entry point does not export.
            'ae-forgotten-export': { logLevel: 'error', addToApiReportFile: false },
          },
          tsdocMessageReporting: { default: { logLevel: 'none' } },
        },
      },
      configObjectFullPath: path.join(root, 'api-extractor.json'),
      packageJsonFullPath: path.join(root, 'package.json'),
    });
    const result = Extractor.invoke(config, { localBuild: update, showVerboseMessages: false });
    if (!result.succeeded) {
      failed = true;
      console.error(
        result.apiReportChanged
          ? `etc/${report} does not match the public API: review the change, then run \`npm run api:update\` and commit the report.`
          : `API Extractor failed for ${entry} (${result.errorCount} errors).`,
      );
    }
  }
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
