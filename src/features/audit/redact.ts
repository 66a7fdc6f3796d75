import { analysePattern } from '../../lib/schema/safeRegExp.js';

/**
 * Redaction of secrets before anything reaches the audit log or the diagnostic log.
 *
 * Two independent rules, both applied by `redactValue`:
 * 1. **Keys.** A value under a key that looks secret (see `isSecretKey`) is replaced whole with
 *    `[REDACTED]`, whatever it is (string, number, object, array), at any depth. `null`,
 *    `undefined`, booleans and the empty string are kept: they carry no secret and show whether
 *    one was given.
 * 2. **Patterns.** In every other string, at any depth, substrings that look like credentials
 *    (key prefixes, JWTs, private key blocks, `Bearer` tokens, passwords in URLs, `key=value`
 *    with a secret key name, and YAML's block scalars, tags and anchors under one) are replaced with `[REDACTED:<kind>]`, or with `[REDACTED]` for a
 *    `key=value` or a configured pattern. Only the secret part is replaced where the pattern
 *    says which part that is (`Bearer [REDACTED:bearer]`, `postgres://u:[REDACTED:url_password]@h`).
 *
 * Redaction never mutates its input and returns plain objects and arrays: the input's own
 * where nothing in them changed, copies where something did. Object keys are kept as they are
 * (a secret used as a key is not caught). Errors become `{ name, message }`.
 * A reference back to an enclosing object becomes `"[Circular]"`, nesting beyond `maxDepth`
 * becomes `"[Truncated]"`, and a value whose getters or `toJSON` throw becomes
 * `"[Unserializable]"`. Applying a redactor twice gives the same result as once.
 *
 * Longer than most modules because the key rules, the known-format patterns and the pair and text
 * forms are one redaction that must run as a single pass per value.
 */

export const REDACTED = '[REDACTED]';

/**
 * Key names whose values are secrets. A key matches an entry when the entry's words appear in
 * the key's words in order (`x-api-key`, `apiKey`, `API_KEY` and `github_api_key` all match
 * `api_key`), or when the key written without separators ends with the entry written without
 * separators (`APIKEY`, `xauthtoken`). Words are split at `_`, `-`, spaces, dots and camelCase
 * boundaries, case-insensitively. So `max_tokens` and `tokenizer` do not match `token`.
 * Common non-English words for a password are included (`passwort`, `contraseña`, `пароль`, ...).
 */
export const DEFAULT_SECRET_KEYS: readonly string[] = [
  'token',
  'password',
  'passwords',
  'passwd',
  'passphrase',
  'passcode',
  'secret',
  'secrets',
  'authorization',
  'auth',
  'api_key',
  'access_key',
  'secret_key',
  'private_key',
  'client_secret',
  'cookie',
  'cookies',
  'set_cookie',
  'credential',
  'credentials',
  'session',
  'bearer',
  'jwt',
  'pin_code',
  'pincode',
  // Password in other languages: German, Dutch, Spanish, French, Italian, Portuguese, Polish,
  // Swedish/Norwegian/Danish, Finnish, Turkish, Russian/Ukrainian, Chinese, Japanese, Korean.
  'passwort',
  'kennwort',
  'wachtwoord',
  'contraseña',
  'contrasena',
  'clave_secreta',
  'mot_de_passe',
  'parola_d_ordine',
  'senha',
  'hasło',
  'haslo',
  'lösenord',
  'losenord',
  'passord',
  'adgangskode',
  'salasana',
  'şifre',
  'sifre',
  'пароль',
  '密码',
  '密碼',
  'パスワード',
  '비밀번호',
];

/**
 * Short key names that are secrets only as a whole word at the end of a key: `pin`, `userPin`
 * and `X-Api-Key` match, `pinned`, `keyboard`, `monkey`, `key_id` and `passThrough` do not
 * (the compact-suffix rule above would take `monkey` for `key` and `bypass` for `pass`).
 */
export const DEFAULT_SECRET_LAST_WORDS: readonly string[] = [
  'pwd',
  'pass',
  'pin',
  'otp',
  'key',
  'sig',
  'signature',
];

/**
 * Words that make a key ending in `key` name a kind of key that is not a secret: `public_key`,
 * `sort_key`, `primary_key`, `idempotency_key`, ... (their values are names, ids or public data).
 */
const PUBLIC_KEY_KINDS: ReadonlySet<string> = new Set([
  'public',
  'pub',
  'sort',
  'primary',
  'partition',
  'foreign',
  'range',
  'hash',
  'cache',
  'idempotency',
  'dedup',
  'dedupe',
  'deduplication',
  'lookup',
  'composite',
  'row',
  'object',
  'map',
  'unique',
  'index',
  'group',
  'routing',
  'message',
  'translation',
  'i18n',
  'hot',
  'shortcut',
  'music',
]);

/** A built-in credential pattern. `secret*` named groups, when present, mark the part to replace. */
interface SecretPattern {
  readonly kind: string;
  /** Flags `dg` (plus any of `imsu`). */
  readonly regex: RegExp;
  /**
   * Regular-expression source of text that every match contains (a literal part of the
   * pattern). The hints of all patterns are joined into one expression that most strings fail
   * in a single scan, so they are not scanned once per pattern.
   */
  readonly hint?: string;
  /**
   * Further check on the matched secret (and the match's named groups), for patterns a regular
   * expression alone would overmatch. `before` is the text of its line before the match (before its `name`).
   */
  readonly accept?: (secret: string, groups: Groups, before: string) => boolean;
}

/** The named groups of a match. */
type Groups = Readonly<Record<string, string | undefined>>;

/**
 * A pattern ready to run. `probe` is its non-global twin, for a quick "any match at all?"
 * before `matchAll`, which clones its expression on every call: most strings match nothing,
 * and probing first halves the cost of redacting them. A non-global expression neither reads
 * nor writes `lastIndex`, so it can be shared.
 */
interface CompiledPattern extends SecretPattern {
  readonly probe: RegExp;
}

function compiled(pattern: SecretPattern): CompiledPattern {
  return { ...pattern, probe: new RegExp(pattern.regex.source, pattern.regex.flags.replace(/[dg]/g, '')) };
}

// Flags: `g` to find every occurrence, `d` for the indices of the `secret` group.
// Every pattern starts with a literal or a look-behind that fails fast, so a scan is linear in
// the string's length; none has nested quantifiers that can match the same text.
const BUILTIN_PATTERNS: readonly SecretPattern[] = [
  {
    // PEM and PGP private key blocks, up to their END line, or to the end of a truncated text.
    kind: 'private_key',
    hint: '-----BEGIN',
    regex:
      /-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/dg,
  },
  {
    // header.payload.signature, both JSON parts base64url of `{"` (so `eyJ`); the signature may
    // be empty (`alg: none`).
    kind: 'jwt',
    hint: 'eyJ',
    regex: /(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/dg,
  },
  {
    // GitHub: personal, OAuth, user-to-server, server-to-server, refresh tokens; fine-grained PATs.
    kind: 'github_token',
    hint: 'gh[pousr]_|github_pat_',
    regex: /(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})/dg,
  },
  { kind: 'gitlab_token', hint: 'glpat-', regex: /(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}/dg },
  { kind: 'slack_token', hint: 'xox[abposr]-', regex: /(?<![A-Za-z0-9_-])xox[abposr]-[A-Za-z0-9-]{10,}/dg },
  {
    kind: 'aws_key',
    hint: 'AKIA|ASIA|ABIA|ACCA',
    regex: /(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])/dg,
  },
  { kind: 'google_key', hint: 'AIza', regex: /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}/dg },
  { kind: 'npm_token', hint: 'npm_', regex: /(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])/dg },
  { kind: 'hf_token', hint: 'hf_', regex: /(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}/dg },
  {
    // OpenAI (`sk-`, `sk-proj-`), Anthropic (`sk-ant-`), and Stripe secret/restricted keys.
    kind: 'api_key',
    hint: '[sr]k[-_]',
    regex: /(?<![A-Za-z0-9_-])(?:sk-[A-Za-z0-9_-]{20,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})/dg,
  },
  {
    // `Authorization: Bearer <token68>`. English prose says "bearer" too ("bearer bonds are
    // ..."), so the token must look random: a digit or symbol in it, or at least 20 characters.
    kind: 'bearer',
    hint: '[Bb]earer',
    regex: /(?<![A-Za-z0-9])[Bb]earer\s+(?<secret>[A-Za-z0-9\-._~+/]{8,}=*)/dg,
    accept: (secret) => secret.length >= 20 || /[0-9\-._~+/=]/.test(secret),
  },
  {
    // The password in `scheme://user:password@host` (database URLs in error messages).
    kind: 'url_password',
    hint: ':\\/\\/',
    regex: /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s/:@]*:(?<secret>[^\s/@]+)@/dg,
  },
  {
    // A token as the whole user part, `https://<key>@host` (Sentry DSNs, tokens in git remotes).
    // Long and without a colon: `ssh://git@host` is a user name, not a secret.
    kind: 'url_token',
    hint: ':\\/\\/',
    regex: /(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/(?<secret>[A-Za-z0-9_~.%+-]{16,})@/dg,
  },
  {
    // Incoming webhooks, whose URL path is the credential: Slack and Discord.
    kind: 'webhook',
    // Hints are literal and start with a character the others start with too: each new first
    // character makes the one scan every string gets slower (a URL has `://` anyway).
    hint: ':\\/\\/|hooks\\.slack',
    regex:
      /(?:hooks\.slack\.com\/(?:services|workflows|triggers)\/(?<secret>[A-Za-z0-9_/-]{8,})|discord(?:app)?\.com\/api\/webhooks\/(?<secretDiscord>[0-9]+\/[A-Za-z0-9_-]{20,}))/dg,
  },
  {
    // `mysql -pSECRET` (and its siblings): the password glued to `-p` on the same command line.
    kind: 'cli_password',
    hint: '--?[A-Za-z]',
    regex:
      /(?<![\w-])(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)(?![\w-])[^\n|;&]{0,300}?[ \t]-p(?<secret>[^\s'"]+)/dg,
  },
  {
    // `curl -u user:password` / `--user user:password` (and wget's `--password` is a flag below).
    kind: 'cli_password',
    hint: '--?[A-Za-z]',
    regex:
      /(?<![\w-])curl(?![\w-])[^\n|;&]{0,300}?(?:[ \t]-u|[ \t]--user)(?:[ \t]+|=)['"]?[^\s:'"@]{1,100}:(?<secret>[^\s'"]+)/dg,
  },
];

export interface RedactorOptions {
  /**
   * Key names whose values are secrets, in addition to `DEFAULT_SECRET_KEYS` (see there for how
   * they match). Also used for `key=value` and `"key": "value"` text inside strings.
   */
  readonly secretKeys?: readonly string[];
  /**
   * Extra credential patterns: JavaScript regular-expression source (`ACME-[0-9a-f]{32}`), or a
   * literal with flags `/acme-[0-9a-f]{32}/i` (flags `i`, `m`, `s`, `u`). A named group
   * `(?<secret>...)` limits the replacement to that part. Matches become `[REDACTED]`.
   * A pattern that does not compile, matches the empty string, or could backtrack
   * catastrophically (src/repairs/safeRegExp.ts) makes `createRedactor` throw.
   */
  readonly secretPatterns?: readonly string[];
  /** false: only the given keys and patterns, no built-in ones. Default true. */
  readonly defaults?: boolean;
  /** Objects and arrays nested deeper than this become `"[Truncated]"`. Default 64. */
  readonly maxDepth?: number;
}

export interface Redactor {
  /** A redacted copy of `value`: key rule and pattern rule, at any depth. */
  redactValue(value: unknown): unknown;
  /** `text` with credential-looking substrings replaced (the pattern rule). */
  redactText(text: string): string;
  /**
   * The pattern rule only, at any depth, keys left alone: for structures whose keys are our own
   * field names (an audit record has a `session` field that is not a secret).
   */
  redactStrings(value: unknown): unknown;
  /** Whether a value under this key is replaced whole. */
  isSecretKey(key: string): boolean;
}

/** Thrown by `createRedactor` for a configured pattern or key it cannot use. */
export class RedactorConfigError extends Error {
  override readonly name = 'RedactorConfigError';
}

interface KeyEntry {
  readonly words: readonly string[];
  readonly compact: string;
}

/** `X-Api-Key` → [x, api, key]; `APIKey` → [api, key]; `accessToken2` → [access, token2]. */
export function keyWords(key: string): string[] {
  return key
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu}+)(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== '');
}

function containsRun(haystack: readonly string[], needle: readonly string[]): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

const MAX_KEY_CACHE = 2048;

/** The key rule: entries and last words from the config, and a bounded memory of keys judged. */
interface KeyRule {
  readonly entries: readonly KeyEntry[];
  readonly lastWords: ReadonlySet<string>;
  readonly cache: Map<string, boolean>;
}

/** What a redactor applies, fixed when it is built (but for the key rule's memory). */
interface RedactorState {
  readonly maxDepth: number;
  readonly keys: KeyRule;
  /** Patterns with a hint, in their order; `anyHint` finds a string that may match one of them. */
  readonly hinted: readonly CompiledPattern[];
  readonly anyHint: RegExp | undefined;
  readonly unhinted: readonly CompiledPattern[];
}

/** Builds a redactor; throws `RedactorConfigError` for an unusable key or pattern. */
export function createRedactor(options: RedactorOptions = {}): Redactor {
  const useDefaults = options.defaults ?? true;
  const maxDepth = options.maxDepth ?? 64;
  if (!Number.isInteger(maxDepth) || maxDepth < 1) {
    throw new RedactorConfigError(`Expected maxDepth to be a positive integer, got ${String(maxDepth)}`);
  }
  const keys: KeyRule = {
    entries: keyEntriesOf([...(useDefaults ? DEFAULT_SECRET_KEYS : []), ...(options.secretKeys ?? [])]),
    lastWords: new Set(useDefaults ? DEFAULT_SECRET_LAST_WORDS : []),
    cache: new Map(),
  };
  const ready = secretPatternsOf(keys, options).map(compiled);
  // Patterns with a hint first (the built-in ones and the key=value one), in their order; a
  // string that matches no hint cannot match any of them, and most strings match none.
  const hinted = ready.filter((pattern) => pattern.hint !== undefined);
  const state: RedactorState = {
    maxDepth,
    keys,
    hinted,
    anyHint:
      hinted.length === 0
        ? undefined
        : new RegExp([...new Set(hinted.map((pattern) => pattern.hint))].join('|'), 'u'),
    unhinted: ready.filter((pattern) => pattern.hint === undefined),
  };
  return {
    redactValue: (value) => walk(state, value, 0, [], true),
    redactText: (text) => redactText(state, text),
    redactStrings: (value) => walk(state, value, 0, [], false),
    isSecretKey: (key) => isSecretKey(keys, key),
  };
}

function keyEntriesOf(secretKeys: readonly string[]): KeyEntry[] {
  return secretKeys.map((key) => {
    const words = keyWords(key);
    if (words.length === 0) {
      throw new RedactorConfigError(`secret key ${JSON.stringify(key)} has no letters or digits`);
    }
    return { words, compact: words.join('') };
  });
}

/** The pattern rule's patterns, in the order they are applied. */
function secretPatternsOf(keys: KeyRule, options: RedactorOptions): SecretPattern[] {
  const useDefaults = options.defaults ?? true;
  const patterns: SecretPattern[] = useDefaults ? [...BUILTIN_PATTERNS] : [];
  // Patterns that find a name next to a value, and let the key rule judge the name.
  const isSecretName = (groups: Groups): boolean =>
    groups.name !== undefined && isSecretKey(keys, groups.name);
  const assignment = assignmentPattern(keys.entries, keys.lastWords, (_secret, groups, before) => {
    if (!isSecretName(groups)) return false;
    if (readsAsProse(groups, before)) return false;
    // A short name that is secret only as a last word (`key`, `pin`, `pass`) also shows up in
    // prose ("the key: read the manual") and code (`const key = map.get(id)`): it needs `=`
    // without spaces (`?key=…`, `PIN=…`), or after a colon a value that does not read as a word.
    const name = groups.name ?? '';
    if (matchesEntry(keys, keyWords(name))) return true;
    if (groups.sep === '=') return groups.pre === '' && groups.post === '';
    const value =
      groups.secretBare ?? groups.secretDq ?? groups.secretEdq ?? groups.secretSq ?? groups.secretEsq ?? '';
    return value.length >= 12 || /[^\p{L}]/u.test(value);
  });
  // Before the assignment pattern, which would take a block indicator (`|`) or a tag for the value.
  if (useDefaults) patterns.push(...yamlPatterns(keys.entries, keys.lastWords, isSecretName));
  if (assignment !== undefined) patterns.push(assignment);
  if (useDefaults) patterns.push(...namedPatterns(isSecretName));
  for (const source of options.secretPatterns ?? []) patterns.push(compileCustomPattern(source));
  return patterns;
}

/**
 * Whether a `name: value` is a sentence rather than a setting: in the middle of a line, after a
 * word ("the server needs an auth: section"), named by one lowercase word, with a colon and a space, and a value that is one
 * ordinary word without an authorization scheme. A setting starts its line (`password: x` in
 * YAML, a header `Authorization: …`), and a credential rarely reads as a plain word; a quoted
 * value, `=`, or a value with digits or symbols is still taken for a secret.
 */
function readsAsProse(groups: Groups, before: string): boolean {
  if (groups.sep !== ':' || groups.post === '' || groups.pre !== '' || (groups.scheme ?? '') !== '')
    return false;
  const value = groups.secretBare;
  // `client_secret`, `refreshToken`: an identifier, so a setting, whatever surrounds it.
  if (!/^\p{Ll}+$/u.test(groups.name ?? '')) return false;
  // A password or secret is often a plain word itself ("the password: swordfish"); only names
  // that sentences use as ordinary nouns get the benefit of the doubt.
  if (!PROSE_NAMES.has(groups.name ?? '')) return false;
  if (value === undefined || !/\p{L}[ \t]+$/u.test(before)) return false;
  return /^\p{L}\p{Ll}{0,19}[.:!?)]*$/u.test(value);
}

/** Secret-sounding names that gateway and server messages also use as ordinary nouns. */
const PROSE_NAMES: ReadonlySet<string> = new Set([
  'auth',
  'authorization',
  'token',
  'session',
  'credential',
  'credentials',
  'cookie',
  'cookies',
]);

/** The text of `text`'s line before `index`. */
function lineBefore(text: string, index: number): string {
  return text.slice(text.lastIndexOf('\n', index - 1) + 1, index);
}

function isSecretKey(keys: KeyRule, key: string): boolean {
  const cached = keys.cache.get(key);
  if (cached !== undefined) return cached;
  const words = keyWords(key);
  const secret = endsWithSecretWord(words, keys.lastWords) || matchesEntry(keys, words);
  // Keys repeat across calls (the same tools, the same argument names); bound the memory.
  if (keys.cache.size >= MAX_KEY_CACHE) keys.cache.clear();
  keys.cache.set(key, secret);
  return secret;
}

/** The key rule without the last-word names: a run of an entry's words, or its compact suffix. */
function matchesEntry(keys: KeyRule, words: readonly string[]): boolean {
  const compact = words.join('');
  return keys.entries.some((entry) => containsRun(words, entry.words) || compact.endsWith(entry.compact));
}

function redactText(state: RedactorState, text: string): string {
  let result = text;
  if (state.anyHint?.test(text)) for (const pattern of state.hinted) result = applyPattern(result, pattern);
  for (const pattern of state.unhinted) result = applyPattern(result, pattern);
  return result;
}

/**
 * Copy on write: a plain object or array in which nothing needs redacting is returned as it
 * is (most arguments hold no secret, and copying them was most of the cost of a record).
 * `ancestors` is the path from the root, for cycles (an array: depth is bounded and small).
 * `byKey` false applies the pattern rule only (see `redactStrings`).
 */
function walk(
  state: RedactorState,
  value: unknown,
  depth: number,
  ancestors: object[],
  byKey: boolean,
): unknown {
  if (typeof value === 'string') return redactText(state, value);
  if (typeof value !== 'object' || value === null) return value;
  if (ancestors.includes(value)) return '[Circular]';
  if (depth >= state.maxDepth) return '[Truncated]';
  ancestors.push(value);
  try {
    if (value instanceof Error) {
      return { name: value.name, message: redactText(state, value.message) };
    }
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return walk(state, toJSON.call(value), depth + 1, ancestors, byKey);
    if (Array.isArray(value)) return walkArray(state, value, depth, ancestors, byKey);
    return walkObject(state, value as Record<string, unknown>, depth, ancestors, byKey);
  } catch {
    return '[Unserializable]';
  } finally {
    ancestors.pop();
  }
}

function walkArray(
  state: RedactorState,
  value: readonly unknown[],
  depth: number,
  ancestors: object[],
  byKey: boolean,
): unknown {
  let out: unknown[] | undefined;
  for (let i = 0; i < value.length; i++) {
    const item: unknown = value[i];
    // An argument vector: `["--password", "x"]` (the `--password=x` form is a pattern).
    const redacted =
      byKey && i > 0 && isSecretFlag(state.keys, value[i - 1])
        ? secretValue(item)
        : walk(state, item, depth + 1, ancestors, byKey);
    if (out === undefined) {
      if (redacted === item) continue;
      out = value.slice(0, i);
    }
    out.push(redacted);
  }
  return out ?? value;
}

function walkObject(
  state: RedactorState,
  value: Record<string, unknown>,
  depth: number,
  ancestors: object[],
  byKey: boolean,
): unknown {
  const proto = Object.getPrototypeOf(value) as unknown;
  // Anything but a plain object (a class instance, a Map) becomes one, as JSON would see it.
  let out: Record<string, unknown> | undefined =
    proto === Object.prototype || proto === null ? undefined : {};
  const keys = Object.keys(value);
  // A name/value pair (`{name: "GITHUB_TOKEN", value: "..."}`, `{key: "X-Api-Key", value}`):
  // the name says whether the value is a secret, and the name itself is not one.
  const pair = byKey ? pairOf(state.keys, value) : undefined;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = value[key];
    const redacted =
      pair !== undefined && (key === pair.nameKey || key === pair.valueKey)
        ? key === pair.valueKey && pair.secret
          ? secretValue(item)
          : walk(state, item, depth + 1, ancestors, byKey)
        : byKey && isSecretKey(state.keys, key)
          ? secretValue(item)
          : walk(state, item, depth + 1, ancestors, byKey);
    if (out === undefined) {
      if (redacted === item) continue;
      out = {};
      for (let j = 0; j < i; j++) setData(out, keys[j]!, value[keys[j]!]);
    }
    setData(out, key, redacted);
  }
  return out ?? value;
}

/** `--password`, `-password`, `--api-key`: a flag whose next argument is a secret. */
function isSecretFlag(keys: KeyRule, item: unknown): boolean {
  return typeof item === 'string' && item.length < 64 && item.startsWith('-') && isSecretKey(keys, item);
}

/** The name and value members of a name/value pair object, and whether the name is secret. */
function pairOf(
  keys: KeyRule,
  object: Record<string, unknown>,
): { nameKey: string; valueKey: string; secret: boolean } | undefined {
  const valueKey = Object.hasOwn(object, 'value')
    ? 'value'
    : Object.hasOwn(object, 'Value')
      ? 'Value'
      : undefined;
  if (valueKey === undefined) return undefined;
  for (const nameKey of PAIR_NAME_KEYS) {
    const name = object[nameKey];
    if (typeof name === 'string' && Object.hasOwn(object, nameKey))
      return { nameKey, valueKey, secret: isSecretKey(keys, name) };
  }
  return undefined;
}

/**
 * Sets an own data property. A `__proto__` key (JSON.parse makes it an own key) must stay data,
 * not replace the copy's prototype, so it goes through defineProperty.
 */
function setData(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** What replaces a value under a secret key. */
function secretValue(value: unknown): unknown {
  if (value === null || value === undefined || typeof value === 'boolean' || value === '') return value;
  return REDACTED;
}

function applyPattern(text: string, pattern: CompiledPattern): string {
  if (!pattern.probe.test(text)) return text;
  let out = '';
  let last = 0;
  let replaced = false;
  for (const match of text.matchAll(pattern.regex)) {
    const indices = match.indices;
    if (indices === undefined) continue;
    let range: [number, number] | undefined = indices[0];
    // The first `secret…` group that took part in the match marks the part to replace.
    for (const [name, groupRange] of Object.entries(indices.groups ?? {})) {
      if (name.startsWith('secret') && groupRange !== undefined) {
        range = groupRange;
        break;
      }
    }
    if (range === undefined) continue;
    const [start, end] = range;
    const secret = text.slice(start, end);
    // Already redacted (by an earlier pattern or an earlier pass): keep redaction idempotent.
    if (secret.startsWith('[REDACTED')) continue;
    if (
      pattern.accept !== undefined &&
      !pattern.accept(secret, match.groups ?? {}, lineBefore(text, indices.groups?.name?.[0] ?? match.index))
    )
      continue;
    out += text.slice(last, start) + (pattern.kind === '' ? REDACTED : `[REDACTED:${pattern.kind}]`);
    last = end;
    replaced = true;
  }
  return replaced ? out + text.slice(last) : text;
}

/**
 * `key=value`, `key: value`, `"key":"value"` (also inside JSON escaped in a string) where `key`
 * holds a secret key name: `GITHUB_TOKEN=…`, `password: …`, `{"apiKey":"…"}`, `?key=…`,
 * `X-Amz-Signature=…`, `Authorization: Basic …` (the scheme word is kept). The regular expression
 * finds candidates (a key containing an entry's name); `accept` judges the whole key by the key
 * rule, so `monkey=` is not taken for `key=`. The key's own prefix is bounded (40 characters)
 * and must start a word, so a scan stays linear.
 */
function assignmentPattern(
  entries: readonly KeyEntry[],
  lastWords: ReadonlySet<string>,
  accept: NonNullable<SecretPattern['accept']>,
): SecretPattern | undefined {
  if (entries.length === 0 && lastWords.size === 0) return undefined;
  const key = secretKeySource(entries, lastWords);
  // The separator first, and the key looked for behind it: the scan then stops only at `:` and
  // `=`, instead of trying every key name at every position of the text.
  // Spaces and tabs only around the separator: `password:` at the end of a line is a prompt,
  // and the next line's first word is not its value.
  const separator = `(?<sep>[:=])(?<=${key}(?:\\\\?["'])?(?<pre>[ \\t]*)[:=])(?<post>[ \\t]*)`;
  const scheme = `(?:(?:Bearer|Basic|Token|Digest)\\s+)?`;
  const value =
    `(?!${scheme}(?:\\\\?["'])?\\[REDACTED)(?<scheme>${scheme})` +
    `(?:"(?<secretDq>${QUOTED_DQ})"|\\\\"(?<secretEdq>${ESCAPED_DQ})\\\\"|'(?<secretSq>${QUOTED_SQ})'|\\\\'(?<secretEsq>[^'\\\\]+)\\\\'|(?<secretBare>[^\\s"'\\\\&,;}\\]<]+))`;
  return { kind: '', hint: '[:=]', regex: new RegExp(separator + value, 'dgiu'), accept };
}

/**
 * The inside of a double-quoted value: a backslash escapes the next character, so
 * `"ab\"cd"` is one value (YAML, JSON and shell double quotes all escape this way).
 */
const QUOTED_DQ = String.raw`(?:[^"\\]|\\[^])+`;
/**
 * The inside of a double-quoted value in JSON that is itself inside a JSON string
 * (`{\"password\":\"ab\\\"cd\"}`): its quotes are `\"`, and an escape of its own is an
 * escaped backslash (`\\`) followed by one more escaped or plain character.
 */
const ESCAPED_DQ = String.raw`(?:[^"\\]|\\\\(?:\\[^]|[^\\]))+`;
/**
 * The inside of a single-quoted value: YAML writes a quote inside as two (`'ab''cd'`), other
 * syntaxes escape it with a backslash.
 */
const QUOTED_SQ = String.raw`(?:[^'\\]|''|\\[^])+`;

/**
 * A key containing a secret key name, as a regular expression whose `name` group the key rule
 * then judges. The key's own prefix is bounded (40 characters) and must start a word.
 */
function secretKeySource(entries: readonly KeyEntry[], lastWords: ReadonlySet<string>): string {
  // Longest first, so `secret_key` is tried before `secret`.
  const names = [...entries.map((entry) => entry.words), ...[...lastWords].map((word) => [word])]
    .sort((a, b) => b.join('').length - a.join('').length)
    .map((words) => words.map(escapeRegExp).join('[_\\-. ]?'));
  return `(?<![\\p{L}\\p{N}_-])(?<name>[\\p{L}\\p{N}_-]{0,40}?(?:${names.join('|')}))(?![\\p{L}\\p{N}])`;
}

/**
 * YAML forms the `key: value` pattern does not see whole, under a secret key (quoted or not,
 * also as a list item): a block scalar (`password: |`, `>-`, `|2`) or a value on the lines
 * below (`password:` then an indented line), whose lines are every following line indented
 * deeper than the key; and a value behind node properties, a tag or an anchor
 * (`password: !!str X`, `password: &pw X`); and a complex key (`? password` then `: X`). The
 * value, with its properties, is replaced.
 */
function yamlPatterns(
  entries: readonly KeyEntry[],
  lastWords: ReadonlySet<string>,
  isSecretName: (groups: Groups) => boolean,
): SecretPattern[] {
  if (entries.length === 0 && lastWords.size === 0) return [];
  const key = `(?<q>["']?)${secretKeySource(entries, lastWords)}\\k<q>[ \\t]*:`;
  // A tag or an anchor, then a space or the end of the line.
  const property = `(?:[!&][^\\s]{0,200}(?:[ \\t]+|(?=\\r?\\n)))`;
  // A line of the block: deeper than the key's own indentation, or blank.
  const blockLines = `(?:\\r?\\n(?:\\k<indent>[ \\t]+[^\\n]*|[ \\t]*(?=\\r?\\n)))+`;
  const accept = (_secret: string, groups: Groups): boolean => isSecretName(groups);
  return [
    {
      kind: '',
      hint: ':',
      regex: new RegExp(
        `^(?<indent>[ \\t]*)(?:-[ \\t]+)*${key}[ \\t]*(?<secret>${property}{0,4}(?:[|>][1-9+-]{0,2})?[ \\t]*(?:#[^\\n]*)?${blockLines})`,
        'dgmu',
      ),
      accept,
    },
    {
      kind: '',
      hint: ':',
      regex: new RegExp(`${key}[ \\t]+(?<secret>${property}{1,4}[^\\s#][^\\n]*)`, 'dgu'),
      accept,
    },
    {
      // The complex-key form: `? password` on one line, `: value` on the next at the same
      // indentation, the value inline, as a block, or on the lines below.
      kind: '',
      hint: ':',
      regex: new RegExp(
        `^(?<indent>[ \\t]*)\\?[ \\t]+(?<q>["']?)${secretKeySource(entries, lastWords)}\\k<q>[ \\t]*(?:#[^\\n]*)?\\r?\\n\\k<indent>:[ \\t]*` +
          `(?<secret>[^\\s#][^\\n]*(?:${blockLines})?|(?:#[^\\n]*)?${blockLines})`,
        'dgmu',
      ),
      accept,
    },
  ];
}

/**
 * Patterns where a name stands next to its value in other syntaxes: command-line flags
 * (`--password X`, `--api-key "X"`), XML elements (`<password>X</password>`), and property
 * lists (`<key>API_TOKEN</key><string>X</string>`). The key rule judges the name.
 */
function namedPatterns(isSecretName: (groups: Groups) => boolean): SecretPattern[] {
  const value = `(?:"(?<secretDq>[^"\\n]{1,1000})"|'(?<secretSq>[^'\\n]{1,1000})'|(?<secret>[^\\s"'-][^\\s"']*))`;
  return [
    {
      kind: '',
      hint: '--?[A-Za-z]',
      regex: new RegExp(`(?<![\\w-])--?(?<name>[A-Za-z][A-Za-z0-9_-]{0,40})[ \\t]+${value}`, 'dg'),
      accept: (_secret, groups) => isSecretName(groups),
    },
    {
      kind: '',
      hint: '<\\/',
      regex:
        /<key>(?<name>[^<>]{1,80})<\/key>\s{0,40}<(?:string|data|integer)>(?<secret>[^<]{1,4000})<\/(?:string|data|integer)>/dg,
      accept: (_secret, groups) => isSecretName(groups),
    },
    {
      kind: '',
      hint: '<\\/',
      regex:
        /<(?<name>[\p{L}_][\p{L}\p{N}_.:-]{0,40})(?:[ \t][^<>]{0,200})?>(?<secret>[^<]{1,4000})<\/\k<name>[ \t]*>/dgu,
      // In a property list `<key>` holds a name (see above), not a secret.
      accept: (_secret, groups) => groups.name !== 'key' && isSecretName(groups),
    },
  ];
}

/** Whether a key's last word is one of the short secret names (and not `public_key` and the like). */
function endsWithSecretWord(words: readonly string[], lastWords: ReadonlySet<string>): boolean {
  const last = words[words.length - 1];
  if (last === undefined || !lastWords.has(last)) return false;
  const before = words[words.length - 2];
  return !(last === 'key' && before !== undefined && PUBLIC_KEY_KINDS.has(before));
}

/** Members that name the value of a name/value pair object, in the order they are looked for. */
const PAIR_NAME_KEYS = ['name', 'Name', 'key', 'Key', 'header', 'variable', 'field', 'param'] as const;

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function compileCustomPattern(text: string): SecretPattern {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(text);
  const source = literal?.[1] ?? text;
  const flags = literal?.[2] ?? '';
  if (/[^imsu]/.test(flags)) {
    throw new RedactorConfigError(`secret pattern ${text}: flags may be i, m, s and u, got "${flags}"`);
  }
  let regex: RegExp;
  try {
    regex = new RegExp(source, `${flags}dg`);
  } catch (error) {
    throw new RedactorConfigError(
      `secret pattern ${text} is not a valid regular expression: ${String(error)}`,
    );
  }
  if (new RegExp(source, flags).test('')) {
    throw new RedactorConfigError(`secret pattern ${text} matches the empty string`);
  }
  // Every string of every call is scanned with it: refuse shapes that backtrack badly.
  const analysis = analysePattern(source, flags);
  if (analysis.kind === 'refused') {
    throw new RedactorConfigError(`secret pattern ${text} is refused: it ${analysis.reason}`);
  }
  return { kind: '', regex };
}
