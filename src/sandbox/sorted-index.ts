/**
 * An array kept sorted by a total order, for O(log n) positioning and O(page) reads.
 * Items almost always arrive in order (creation time), so insertion is usually a push.
 */
export interface SortedIndex<T, K> {
  readonly size: number;
  insert(item: T): void;
  remove(item: T): boolean;
  /** Up to `limit` items strictly after `after` (from the start when undefined), and whether more follow. */
  after(after: K | undefined, limit: number): { items: T[]; more: boolean };
  all(): readonly T[];
}

export function createSortedIndex<T, K>(keyOf: (item: T) => K, compare: (a: K, b: K) => number): SortedIndex<T, K> {
  const items: T[] = [];

  /** First position whose key is greater than `key` (or >= when `inclusive`). */
  const bound = (key: K, inclusive: boolean): number => {
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compare(keyOf(items[mid] as T), key);
      if (c < 0 || (c === 0 && !inclusive)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  return {
    get size() {
      return items.length;
    },
    insert(item) {
      const last = items[items.length - 1];
      if (last === undefined || compare(keyOf(last), keyOf(item)) <= 0) {
        items.push(item);
        return;
      }
      items.splice(bound(keyOf(item), false), 0, item);
    },
    remove(item) {
      const key = keyOf(item);
      for (let i = bound(key, true); i < items.length && compare(keyOf(items[i] as T), key) === 0; i++) {
        if (items[i] === item) {
          items.splice(i, 1);
          return true;
        }
      }
      return false;
    },
    after(key, limit) {
      const start = key === undefined ? 0 : bound(key, false);
      const end = Math.min(items.length, start + limit);
      return { items: items.slice(start, end), more: end < items.length };
    },
    all: () => items,
  };
}
