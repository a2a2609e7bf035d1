// Loaded into a receiver with `--import` by bench/alloc.ts. V8's sampling heap profiler, told to keep the samples of
// objects the collector has already freed: what a request allocates and drops is what this bench is after, and the
// default profile keeps only what is still alive. The first SIGUSR2 starts sampling, the second writes the profile to
// the file named by this module's `out` query parameter (`--import file:///…/alloc-sampler.mjs?out=/tmp/x.json`: the
// receivers do not all pass their environment on) and stops; between them the bench sends its measured load.
import fs from 'node:fs';
import inspector from 'node:inspector';

const out = new URL(import.meta.url).searchParams.get('out');
if (!out) throw new Error('alloc-sampler.mjs needs ?out=<file> in its import URL, the file to write the profile to');
const session = new inspector.Session();
session.connect();
const post = (method, params = {}) =>
  new Promise((resolve, reject) => session.post(method, params, (err, result) => (err ? reject(err) : resolve(result))));
await post('HeapProfiler.enable');

let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    void post('HeapProfiler.startSampling', {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    return;
  }
  void post('HeapProfiler.stopSampling').then(({ profile }) => fs.writeFileSync(out, JSON.stringify(profile)));
});
