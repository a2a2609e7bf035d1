/** The sum of every series of one metric in a Prometheus text exposition (`name` or `name{…}`), 0 when absent. */
export function metricSum(exposition: string, name: string): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Events the worker finished per batch it ran, from a `serve` process's own counters: a batch's fixed costs
 * (the turn, the round trips, the commit) are spread over that many events.
 */
export async function eventsPerBatch(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const batches = metricSum(text, 'postroom_worker_batch_duration_seconds_count');
  return batches > 0 ? metricSum(text, 'postroom_events_processed_total') / batches : 0;
}
