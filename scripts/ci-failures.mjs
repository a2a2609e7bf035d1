#!/usr/bin/env node
// Prints every failed test (and every file that failed to load) from vitest JSON reports,
// so the last lines of a red CI log name the cause even when only its tail is kept.
// Usage: node scripts/ci-failures.mjs <label>=<report.json> ...
import { readFileSync } from 'node:fs';

let failures = 0;
for (const arg of process.argv.slice(2)) {
  const at = arg.indexOf('=');
  const label = arg.slice(0, at);
  const file = arg.slice(at + 1);
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
  if (report.success === false && failures === before)
    console.log(`${label}: the run failed without a failed test (an unhandled error or a hook); see its output above`);
}
if (failures === 0) console.log('no failed tests');

function clip(text = '') {
  const lines = String(text).split('\n').slice(0, 12);
  return lines.join('\n  ').slice(0, 2000);
}
