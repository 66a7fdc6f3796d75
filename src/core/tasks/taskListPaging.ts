import type { Params } from '../protocol/jsonRpc.js';

/** A host's `tasks/list` page holds at most this many tasks. */
export const MAX_TASKS_PAGE = 100;
/** One `tasks/list` asks the lists behind it at most this many times (empty pages are skipped). */
export const MAX_LIST_FETCHES = 16;

/** Where a list goes on: which list behind it, that list's own cursor, how far into that page. */
export interface ListPosition {
  readonly index: number;
  readonly cursor: string | undefined;
  readonly skip: number;
}

/** One page of a list behind the one served. */
export interface FetchedPage {
  readonly tasks: readonly Params[];
  readonly next: string | undefined;
}

export interface TaskPagingOptions {
  /** How many lists there are behind the one served, walked in order. */
  readonly lists: number;
  /** Where to start: the position a cursor holds, or the first list's start. */
  readonly from: ListPosition;
  /** The page of list `index` at `cursor` (rejects, or passes over a list, as the caller decides). */
  fetch(index: number, cursor: string | undefined): Promise<FetchedPage>;
  /** Whether a task of list `index` is shown (one the asker may know of). */
  keep(index: number, task: Params): boolean;
}

/**
 * One page of a `tasks/list` served from the lists behind it (the upstreams' lists for the
 * host, the host's list for a server), as one walk for both. A page served holds (part of) one
 * page behind it, at most MAX_TASKS_PAGE tasks, so a cursor is one position in one list; pages
 * with nothing shown are skipped, up to MAX_LIST_FETCHES. `index` names the list the tasks come
 * from; `after`, where the next page starts (undefined at the end).
 */
export async function pageOfTasks(
  options: TaskPagingOptions,
): Promise<{ index: number; tasks: Params[]; after: ListPosition | undefined }> {
  let { index, cursor, skip } = options.from;
  for (let fetches = 0; index < options.lists && fetches < MAX_LIST_FETCHES; fetches++) {
    const page = await options.fetch(index, cursor);
    const shown = page.tasks.filter((task) => options.keep(index, task));
    const tasks = shown.slice(skip, skip + MAX_TASKS_PAGE);
    let after: ListPosition | undefined;
    if (skip + tasks.length < shown.length) after = { index, cursor, skip: skip + tasks.length };
    else if (page.next !== undefined) after = { index, cursor: page.next, skip: 0 };
    else if (index + 1 < options.lists) after = { index: index + 1, cursor: undefined, skip: 0 };
    if (tasks.length > 0 || after === undefined) return { index, tasks, after };
    ({ index, cursor, skip } = after);
  }
  // Only empty pages so far: the asker continues from here.
  return { index, tasks: [], after: index < options.lists ? { index, cursor, skip } : undefined };
}

/** A `tasks/list` answer's tasks and next cursor, as one page behind the served one has them. */
export function fetchedPage(result: Params): FetchedPage {
  const { tasks, nextCursor } = result;
  return {
    tasks: Array.isArray(tasks) ? (tasks as unknown[]).filter(isObject) : [],
    next: typeof nextCursor === 'string' && nextCursor !== '' ? nextCursor : undefined,
  };
}

function isObject(value: unknown): value is Params {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
