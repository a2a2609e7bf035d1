#!/usr/bin/env node
// Prints every failed test (and every file that failed to load) from vitest JSON reports,
// so the last lines of a red CI log name the cause even when only its tail is kept.
// Usage: node scripts/ci-failures.mjs <label>=<report.json>[#<exit code>] ...
// With the run's exit code, a run that failed without a failed test in its report (vitest exits 1 on an
// unhandled error, which the JSON report does not record) is named too.
import { readFileSync } from 'node:fs';

let failures = 0;
for (const arg of process.argv.slice(2)) {
  const at = arg.indexOf('=');
  const label = arg.slice(0, at);
  const hash = arg.lastIndexOf('#');
  const file = hash > at ? arg.slice(at + 1, hash) : arg.slice(at + 1);
  const code = hash > at ? Number(arg.slice(hash + 1)) : 0;
  const before = failures;
  let report;
  try {
    report = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    console.log(`${label}: no readable report (${error.code ?? error.message}); see its output above`);
    failures++;
    continue;
  }
  for (const result of report.testResults ?? []) {
    const failed = (result.assertionResults ?? []).filter((a) => a.status === 'failed');
    if (result.status === 'failed' && failed.length === 0) {
      failures++;
      console.log(`${label}: FILE ${result.name}\n  ${clip(result.message)}`);
    }
    for (const a of failed) {
      failures++;
      console.log(`${label}: FAIL ${result.name} > ${a.fullName}\n  ${clip((a.failureMessages ?? []).join('\n'))}`);
    }
  }
  if ((report.success === false || code !== 0) && failures === before) {
    failures++;
    console.log(
      `${label}: the run failed (exit ${code}) without a failed test: an unhandled error or a hook; see "Unhandled Errors" in its output above`,
    );
  }
}
if (failures === 0) console.log('no failed tests');

function clip(text = '') {
  const lines = String(text).split('\n').slice(0, 12);
  return lines.join('\n  ').slice(0, 2000);
}
