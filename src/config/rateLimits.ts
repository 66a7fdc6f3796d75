import type { RateLimitRule } from './types.js';

type Data = Readonly<Record<string, unknown>>;

const UNIT_MS: Readonly<Record<string, number>> = {
  s: 1_000,
  sec: 1_000,
  second: 1_000,
  min: 60_000,
  minute: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
};

/** `30/minute` → 30 tokens per 60,000 ms; undefined for anything else (the schema said why). */
export function parseRate(text: string): { readonly count: number; readonly perMs: number } | undefined {
  const match = /^([0-9]+) ?\/ ?([a-z]+)$/.exec(text);
  const perMs = match === null ? undefined : UNIT_MS[match[2]!];
  if (match === null || perMs === undefined) return undefined;
  return { count: Number(match[1]), perMs };
}

/**
 * `rateLimits:` as written, absent when it holds no rule; its shape was checked against the JSON schema first, so entries
 * that are not well formed are left out here (the config is then refused anyway). A rate of
 * zero is an error of its own: a bucket that never refills refuses everything forever, which
 * `tools.allow`/policy say more plainly.
 */
export function normalizeRateLimits(
  data: Data,
  add: (keyPath: readonly (string | number)[], message: string) => void,
): { readonly rateLimits?: readonly RateLimitRule[] } {
  const list = data['rateLimits'];
  if (!Array.isArray(list)) return {};
  const rules: RateLimitRule[] = [];
  list.forEach((entry: unknown, index) => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return;
    const e = entry as Data;
    const rate = typeof e['rate'] === 'string' ? parseRate(e['rate']) : undefined;
    if (rate === undefined) return;
    if (rate.count === 0) {
      add(
        ['rateLimits', index, 'rate'],
        'must allow at least one call (to refuse every call, use a policy rule)',
      );
      return;
    }
    const burst = typeof e['burst'] === 'number' ? e['burst'] : rate.count;
    rules.push({
      index,
      ...(typeof e['server'] === 'string' && { server: e['server'] }),
      ...(typeof e['tool'] === 'string' && { tool: e['tool'] }),
      per: e['per'] === 'everyone' ? 'everyone' : 'principal',
      rate: e['rate'] as string,
      refillMs: rate.perMs / rate.count,
      burst,
    });
  });
  return rules.length === 0 ? {} : { rateLimits: rules };
}
