import { ApiError } from './errors.js';
import type { OperationName } from './scopes.js';
import type { Page, PageParams } from './types.js';

/**
 * Walks a cursor-paged list one page at a time: only the current page is held,
 * so memory stays flat however long the list. A service that hands back the
 * cursor it was just given would loop for ever, so that ends the walk with an error.
 */
export async function* iteratePages<T, P extends PageParams>(
  operation: OperationName,
  fetchPage: (params: P) => Promise<Page<T>>,
  params: P,
): AsyncGenerator<T, void, undefined> {
  let cursor = params.cursor;
  for (;;) {
    const page = await fetchPage({ ...params, cursor });
    for (const item of page.items) yield item;
    if (page.nextCursor === null) return;
    if (page.nextCursor === cursor) {
      throw new ApiError({
        code: 'invalid_response',
        message: `${operation}: the service returned the same cursor again; stopping instead of looping`,
        operation,
        attempts: 1,
      });
    }
    cursor = page.nextCursor;
  }
}
