import type { StoreConfig } from './types.js';

type Data = Readonly<Record<string, unknown>>;

/** What `store.timeout` is when the config does not say. */
const DEFAULT_TIMEOUT_MS = 2_000;
const DEFAULT_PREFIX = 'mcp-warden';

/** The store URL as it may appear in messages: the password replaced. */
export function showStoreUrl(url: URL): string {
  const shown = new URL(url.href);
  if (shown.password !== '') shown.password = '***';
  return shown.href;
}

/**
 * `store:` as written (a URL, or an object with `url`, `timeout` and `prefix`); its shape was
 * checked against the JSON schema first. A URL that does not parse, names no host, or writes a
 * database that is not a number is an error here, at load, rather than when the first request
 * needs the store.
 */
export function normalizeStore(
  data: Data,
  ctx: {
    add(keyPath: readonly (string | number)[], message: string): void;
    duration(keyPath: readonly (string | number)[], value: unknown): number | undefined;
  },
): { readonly store?: StoreConfig } {
  const value = data['store'];
  if (value === undefined) return {};
  const section: Data =
    typeof value === 'string'
      ? { url: value }
      : typeof value === 'object' && value !== null
        ? (value as Data)
        : {};
  const at = typeof value === 'string' ? ['store'] : ['store', 'url'];
  const text = section['url'];
  if (typeof text !== 'string') return {};
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    ctx.add(
      at,
      `expected a URL redis://[:PASSWORD@]HOST[:PORT][/DB], got something that does not parse as a URL`,
    );
    return {};
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    ctx.add(at, `expected redis:// or rediss:// (TLS), got ${url.protocol}//`);
    return {};
  }
  if (url.hostname === '') {
    ctx.add(at, `names no host: ${showStoreUrl(url)}`);
    return {};
  }
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^[0-9]+$/.test(db)) {
    ctx.add(at, `the database after the host must be a number (such as /0), got /${db}`);
    return {};
  }
  const listen = data['listen'];
  if (typeof listen === 'object' && listen !== null && typeof (listen as Data)['sessionKey'] !== 'string') {
    ctx.add(
      ['store'],
      "needs listen.sessionKey: the replicas that share a store verify each other's session ids and request states with that shared secret",
    );
    return {};
  }
  const timeoutMs = ctx.duration(['store', 'timeout'], section['timeout']) ?? DEFAULT_TIMEOUT_MS;
  if (timeoutMs <= 0)
    ctx.add(['store', 'timeout'], 'must be more than 0: every store operation needs a bound');
  return {
    store: {
      url: url.href,
      shown: showStoreUrl(url),
      timeoutMs: timeoutMs > 0 ? timeoutMs : DEFAULT_TIMEOUT_MS,
      prefix: typeof section['prefix'] === 'string' ? section['prefix'] : DEFAULT_PREFIX,
    },
  };
}
