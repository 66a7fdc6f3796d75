/**
 * A count with its noun in the right number: `1 policy file`, `2 policy files`, `0 tools`.
 * `many` is for nouns whose plural is not the singular plus "s" (`1 entry`, `2 entries`).
 */
export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
