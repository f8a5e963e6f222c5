/**
 * Reading Prometheus text exposition in tests and benchmarks: the API server's `/metrics` and the
 * controller's. Only what they need: sums of a metric's samples by label substrings.
 */

/** Sum of a metric's samples (`name{…} v` or `name v`) whose line contains every string of `match`. */
export function metricSum(text: string, name: string, ...match: readonly string[]): number {
  let total = 0;
  for (const line of text.split('\n')) {
    if ((line.startsWith(`${name}{`) || line.startsWith(`${name} `)) && match.every((m) => line.includes(m))) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
