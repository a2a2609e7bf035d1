import { createHash } from 'node:crypto';

/**
 * The console's stylesheet and its one script, served from memory by the console itself (nothing to
 * build, nothing fetched from elsewhere). The script only enhances: it asks for confirmation before a
 * form marked data-confirm is sent. Every view and action works without it.
 */
const CSS = `
:root { --fg: #1b1f24; --muted: #4b5563; --line: #d0d7de; --bg: #ffffff; --panel: #f6f8fa; --link: #0a55b5;
  --alarm: #a40e26; --ok: #116329; --warn: #7a4d00; --received: #2f6fd1; --finished: #1f883d; --focus: #bf3989; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--link); }
a:focus-visible, button:focus-visible, input:focus-visible, select:focus-visible, textarea:focus-visible, pre:focus-visible, main:focus-visible {
  outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; top: 0; background: var(--bg); padding: .5em; }
.skip:focus { left: .5em; }
header.top { display: flex; flex-wrap: wrap; gap: .5em 1.5em; align-items: center; padding: .6em 1.2em; border-bottom: 1px solid var(--line); background: var(--panel); }
.brand { font-weight: 700; color: var(--fg); text-decoration: none; }
header nav ul, nav.tabs ul { list-style: none; margin: 0; padding: 0; display: flex; flex-wrap: wrap; gap: .2em 1em; }
nav a[aria-current="page"] { font-weight: 700; color: var(--fg); text-decoration-thickness: 3px; }
form.find { display: flex; gap: .4em; align-items: center; margin-left: auto; }
form.find label { font-size: .85em; color: var(--muted); }
form.who { display: flex; gap: .6em; align-items: center; }
.role { font-size: .8em; border: 1px solid var(--line); border-radius: 1em; padding: 0 .5em; }
.role-operator { border-color: var(--warn); color: var(--warn); }
main { padding: 1em 1.2em 3em; max-width: 1400px; }
h1 { font-size: 1.5em; margin: .2em 0 .6em; overflow-wrap: anywhere; }
h2 { font-size: 1.15em; margin: 1.4em 0 .5em; }
table { border-collapse: collapse; width: 100%; margin: .4em 0 1em; font-size: .93em; }
caption { text-align: left; color: var(--muted); padding: .2em 0; }
th, td { text-align: left; vertical-align: top; padding: .3em .5em; border-bottom: 1px solid var(--line); overflow-wrap: break-word; }
td.id { overflow-wrap: anywhere; min-width: 8em; }
th { background: var(--panel); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.id, .time, code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .92em; }
.time { white-space: nowrap; }
pre.json { background: var(--panel); border: 1px solid var(--line); padding: .8em; overflow: auto; max-height: 40em; white-space: pre-wrap; overflow-wrap: anywhere; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25em 1.2em; margin: 0 0 1em; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.status { font-weight: 600; }
.status-dead, .status-quarantined, .status-open, .status-failed, .status-gaps_open { color: var(--alarm); }
.status-processed, .status-clean, .status-recovered, .status-state_synced, .status-skipped { color: var(--ok); }
.status-received, .status-processing, .status-running, .status-ignored, .status-not_consumed, .status-interrupted { color: var(--warn); }
ul.tiles { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .8em; }
ul.tiles li { border: 1px solid var(--line); border-radius: 6px; padding: .6em 1em; min-width: 11em; background: var(--panel); }
ul.tiles li.alarm { border-color: var(--alarm); }
ul.tiles strong { font-size: 1.5em; display: block; color: var(--fg); }
ul.tiles .sub { display: block; color: var(--muted); font-size: .85em; }
.charts { display: flex; flex-wrap: wrap; gap: 1.5em; }
figure.chart { margin: 0; }
figure.chart svg { max-width: 100%; height: auto; display: block; }
.bar-received { fill: var(--received); }
.bar-finished { fill: var(--finished); }
.axis { stroke: var(--line); }
.tick { font-size: 10px; fill: var(--muted); }
.key-received { color: var(--received); font-weight: 600; }
.key-finished { color: var(--finished); font-weight: 600; }
form.filters { display: flex; flex-wrap: wrap; gap: .6em 1em; align-items: flex-end; padding: .8em; background: var(--panel); border: 1px solid var(--line); border-radius: 6px; }
.field { display: flex; flex-direction: column; gap: .15em; }
.field label { font-size: .85em; color: var(--muted); }
.field.actions { flex-direction: row; gap: .8em; align-items: center; }
.hint { color: var(--muted); font-size: .8em; }
input, select, textarea, button { font: inherit; }
input, select, textarea { border: 1px solid #8c959f; border-radius: 4px; padding: .25em .4em; background: var(--bg); color: var(--fg); }
button, a.button { border: 1px solid #8c959f; background: var(--bg); border-radius: 4px; padding: .3em .9em; cursor: pointer; color: var(--fg); text-decoration: none; display: inline-block; }
button:hover, a.button:hover { background: var(--panel); }
form.stack { display: flex; flex-direction: column; gap: .5em; max-width: 40em; }
.flash { background: #ddf4ff; border: 1px solid #54aeff; padding: .5em .8em; border-radius: 6px; }
.error { background: #ffebe9; border: 1px solid var(--alarm); padding: .5em .8em; border-radius: 6px; }
.note { color: var(--muted); }
.pager { display: flex; gap: 1.5em; align-items: center; margin: 1em 0; }
ol.timeline { list-style: none; padding: 0; border-left: 3px solid var(--line); margin-left: .5em; }
ol.timeline li { padding: .3em .8em; position: relative; }
ol.timeline li.source-reconciler { border-left: 3px solid var(--warn); margin-left: -3px; }
.tag { font-size: .8em; color: var(--warn); border: 1px solid var(--warn); border-radius: 1em; padding: 0 .5em; }
.gist { color: var(--muted); }
.side-by-side { display: grid; grid-template-columns: repeat(auto-fit, minmax(24em, 1fr)); gap: 1.5em; }
.reveal { display: flex; gap: 1em; align-items: center; flex-wrap: wrap; }
`;

const JS = `'use strict';
document.addEventListener('submit', function (event) {
  var form = event.target;
  var question = form && form.getAttribute && form.getAttribute('data-confirm');
  if (question && !window.confirm(question)) event.preventDefault();
});
`;

export const ASSETS = {
  'console.css': { type: 'text/css; charset=utf-8', body: CSS },
  'console.js': { type: 'text/javascript; charset=utf-8', body: JS },
} as const;

/** Changes whenever an asset does, so browsers may keep them and still get a new one after an upgrade. */
export const ASSET_VERSION = createHash('sha256').update(CSS).update(JS).digest('hex').slice(0, 12);
