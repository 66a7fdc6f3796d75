import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  DEFAULT_SECRET_KEYS,
  keyWords,
  REDACTED,
  RedactorConfigError,
} from '../../src/features/audit/redact.js';

// Realistic-looking but fake credentials, assembled so that no scanner mistakes this file for a leak.
const GHP = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const GH_PAT =
  'github_pat_' + '11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU';
const SK = 'sk-' + 'proj-Abc123Def456Ghi789Jkl012Mno345';
const SK_ANT = 'sk-' + 'ant-api03-abcdefghijklmnopqrstuvwxyz0123456789';
const STRIPE = 'sk_' + 'live_4eC39HqLyjWDarjtT1zdp7dc';
const SLACK = 'xox' + 'b-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx';
const AWS = 'AKIA' + 'IOSFODNN7EXAMPLE';
const GOOGLE = 'AIza' + 'SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q';
const NPM = 'npm_' + 'abcdefghijklmnopqrstuvwxyz0123456789';
const GITLAB = 'glpat-' + 'abcdefghij0123456789';
const HF = 'hf_' + 'abcdefghijklmnopqrstuvwxyzABCDEF';
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9' +
  '.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0' +
  '.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const PEM = [
  '-----BEGIN RSA PRIVATE KEY-----',
  'MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB',
  'aFDrBz9vFqU4yF2Yp0d9yQ==',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

describe('redactText: credential patterns', () => {
  const redactor = createRedactor();
  const cases: [name: string, input: string, expected: string][] = [
    ['GitHub classic token', `token is ${GHP}.`, 'token is [REDACTED:github_token].'],
    ['GitHub fine-grained PAT', `use ${GH_PAT}`, 'use [REDACTED:github_token]'],
    ['OpenAI project key', `OPENAI ${SK} end`, 'OPENAI [REDACTED:api_key] end'],
    ['Anthropic key', `(${SK_ANT})`, '([REDACTED:api_key])'],
    ['Stripe secret key', `stripe ${STRIPE}`, 'stripe [REDACTED:api_key]'],
    ['Slack bot token', `slack ${SLACK}`, 'slack [REDACTED:slack_token]'],
    ['AWS access key id', `id ${AWS} here`, 'id [REDACTED:aws_key] here'],
    ['Google API key', `k=${GOOGLE}`, 'k=[REDACTED:google_key]'],
    ['npm token', `npm ${NPM}`, 'npm [REDACTED:npm_token]'],
    ['GitLab token', `gl ${GITLAB}`, 'gl [REDACTED:gitlab_token]'],
    ['Hugging Face token', `hf ${HF}`, 'hf [REDACTED:hf_token]'],
    ['JWT', `jwt ${JWT} ok`, 'jwt [REDACTED:jwt] ok'],
    [
      'Bearer header keeps the scheme',
      'Authorization: Bearer abc123def456ghi',
      'Authorization: Bearer [REDACTED:bearer]',
    ],
    ['Bearer with a JWT', `Bearer ${JWT}`, 'Bearer [REDACTED:jwt]'],
    ['private key block', `key:\n${PEM}\nafter`, 'key:\n[REDACTED:private_key]\nafter'],
    [
      'private key block cut off (no END line)',
      'x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC',
      'x [REDACTED:private_key]',
    ],
    [
      'password in a URL',
      'connect postgres://app:s3cr3t-pw@db.internal:5432/prod failed',
      'connect postgres://app:[REDACTED:url_password]@db.internal:5432/prod failed',
    ],
    [
      'key=value in text',
      'failed with password=hunter2 for user bob',
      'failed with password=[REDACTED] for user bob',
    ],
    ['ENV=value', 'GITHUB_TOKEN=abc123 npm publish', 'GITHUB_TOKEN=[REDACTED] npm publish'],
    ['query string', 'GET /v1?api_key=abc123&limit=5', 'GET /v1?api_key=[REDACTED]&limit=5'],
    ['JSON in text', '{"user":"bob","password":"hunter two"}', '{"user":"bob","password":"[REDACTED]"}'],
    ['escaped JSON in text', '{\\"apiKey\\":\\"abc123\\"}', '{\\"apiKey\\":\\"[REDACTED]\\"}'],
    ['Basic auth header', 'Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic [REDACTED]'],
    ['camelCase key in text', 'accessToken: xyz789', 'accessToken: [REDACTED]'],
  ];
  it.each(cases)('%s', (_name, input, expected) => {
    expect(redactor.redactText(input)).toBe(expected);
  });

  // Bare, with nothing around them that any other pattern's hint could match: each pattern's
  // own hint must let its credentials through the one-scan prefilter.
  it.each([GHP, GH_PAT, SK, SK_ANT, STRIPE, SLACK, AWS, GOOGLE, NPM, GITLAB, HF, JWT])(
    'finds a bare credential through the prefilter: %s',
    (secret) => {
      expect(redactor.redactText(secret)).toMatch(/^\[REDACTED:[a-z_]+\]$/);
    },
  );

  const untouched = [
    'Please tokenize this sentence and count tokens.',
    'max_tokens: 512',
    'The password field is required.',
    'Enter password:\nnext line stays',
    'risk-free skeleton tasks',
    'bearer bonds are paper',
    'Bearer of bad news',
    'http://example.com:8080/path@section',
    'the author: Jane',
    'eyJ is how base64 JSON starts',
    'AKIA is a prefix',
    'sk-learn is a nickname',
    '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
    'An ordinary sentence with secretary, passport and sessions.',
  ];
  it.each(untouched)('leaves ordinary text alone: %j', (text) => {
    expect(redactor.redactText(text)).toBe(text);
  });

  it('is idempotent', () => {
    const text = `Authorization: Bearer ${JWT}; password=x; ${GHP}; ${PEM}`;
    const once = redactor.redactText(text);
    expect(redactor.redactText(once)).toBe(once);
    expect(once).not.toContain('hunter');
    expect(once).not.toContain(GHP);
  });
});

describe('redactValue: secret keys at any depth', () => {
  const redactor = createRedactor();

  it('replaces values under secret keys, keeps the rest', () => {
    const input = {
      path: '/tmp/x',
      password: 'hunter2',
      nested: { deeper: { apiKey: 'abc', 'X-Api-Key': 'def', API_KEY: 'ghi', APIKEY: 'jkl', note: 'ok' } },
      headers: [{ Authorization: 'Basic abc' }, { cookie: 'sid=1' }, { 'Set-Cookie': 'a=b' }],
      github_token: 12345,
      credentials: { user: 'bob', pass: 'x' },
      client_secret: ['a', 'b'],
      privateKey: 'k',
      sessionId: 'sess-1',
      max_tokens: 100,
      tokenizer: 'cl100k',
      author: 'Jane',
    };
    expect(redactor.redactValue(input)).toEqual({
      path: '/tmp/x',
      password: REDACTED,
      nested: {
        deeper: { apiKey: REDACTED, 'X-Api-Key': REDACTED, API_KEY: REDACTED, APIKEY: REDACTED, note: 'ok' },
      },
      headers: [{ Authorization: REDACTED }, { cookie: REDACTED }, { 'Set-Cookie': REDACTED }],
      github_token: REDACTED,
      credentials: REDACTED,
      client_secret: REDACTED,
      privateKey: REDACTED,
      sessionId: REDACTED,
      max_tokens: 100,
      tokenizer: 'cl100k',
      author: 'Jane',
    });
  });

  it('keeps null, booleans and empty strings under secret keys (they hold no secret)', () => {
    expect(redactor.redactValue({ token: null, password: '', secret: false, auth: undefined })).toEqual({
      token: null,
      password: '',
      secret: false,
      auth: undefined,
    });
  });

  it('applies patterns to strings inside arrays and objects', () => {
    expect(
      redactor.redactValue({ cmd: ['curl', '-H', `Authorization: Bearer ${GHP}`], note: `jwt ${JWT}` }),
    ).toEqual({
      cmd: ['curl', '-H', 'Authorization: Bearer [REDACTED:github_token]'],
      note: 'jwt [REDACTED:jwt]',
    });
    expect(redactor.redactValue([[[`${AWS}`]]])).toEqual([[['[REDACTED:aws_key]']]]);
    expect(redactor.redactValue(SK)).toBe('[REDACTED:api_key]');
  });

  it('never mutates its input', () => {
    const input = { a: { password: 'p', list: [`${GHP}`] } };
    const snapshot = structuredClone(input);
    const output = redactor.redactValue(input);
    expect(input).toEqual(snapshot);
    expect(output).not.toBe(input);
  });

  it('returns what needs no redaction as it is, and copies only the path to a change', () => {
    const clean = { path: '/tmp/a', options: { depth: 2, tags: ['x', 'y'] } };
    expect(redactor.redactValue(clean)).toBe(clean);
    const mixed = { keep: { n: 1 }, change: { note: `key ${GHP}` } };
    const out = redactor.redactValue(mixed) as typeof mixed;
    expect(out).not.toBe(mixed);
    expect(out.keep).toBe(mixed.keep);
    expect(out.change).toEqual({ note: 'key [REDACTED:github_token]' });
  });

  it('handles cycles, shared references and depth', () => {
    const cyclic: Record<string, unknown> = { name: 'x' };
    cyclic.self = cyclic;
    const shared = { v: 1 };
    expect(redactor.redactValue({ cyclic, a: shared, b: shared })).toEqual({
      cyclic: { name: 'x', self: '[Circular]' },
      a: { v: 1 },
      b: { v: 1 },
    });
    const shallow = createRedactor({ maxDepth: 2 });
    expect(shallow.redactValue({ a: { b: { c: 1 } } })).toEqual({ a: { b: '[Truncated]' } });
    let deep: unknown = 'end';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(() => redactor.redactValue(deep)).not.toThrow();
  });

  it('turns errors, dates and throwing getters into data', () => {
    const error = new Error('failed: password=hunter2');
    const throwing = {
      get boom(): never {
        throw new Error('no');
      },
    };
    expect(redactor.redactValue({ error, when: new Date(0), throwing })).toEqual({
      error: { name: 'Error', message: 'failed: password=[REDACTED]' },
      when: '1970-01-01T00:00:00.000Z',
      throwing: '[Unserializable]',
    });
  });

  it('keeps a __proto__ key as data', () => {
    const input = JSON.parse('{"__proto__": {"token": "t"}, "x": 1}') as unknown;
    const output = redactor.redactValue(input) as Record<string, unknown>;
    expect(Object.getPrototypeOf(output)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(output, '__proto__')?.value).toEqual({ token: REDACTED });
  });

  it('redactStrings applies patterns only, leaving keys alone', () => {
    expect(redactor.redactStrings({ session: 'abc', error: `bad ${GHP}` })).toEqual({
      session: 'abc',
      error: 'bad [REDACTED:github_token]',
    });
  });
});

describe('key matching', () => {
  it('splits keys into words', () => {
    expect(keyWords('X-Api-Key')).toEqual(['x', 'api', 'key']);
    expect(keyWords('APIKey')).toEqual(['api', 'key']);
    expect(keyWords('accessToken2')).toEqual(['access', 'token2']);
    expect(keyWords('OAuth2Token')).toEqual(['o', 'auth2', 'token']);
    expect(keyWords('db.password')).toEqual(['db', 'password']);
  });

  it('matches word runs and compact suffixes, not substrings', () => {
    const { isSecretKey } = createRedactor();
    for (const key of [
      'token',
      'ACCESS_TOKEN',
      'refreshToken',
      'xauthtoken',
      'x-api-key',
      'SECRET_KEY',
      'passwd',
      'Cookie',
      'set-cookie',
      'jwt',
      'bearer',
      'oauth',
      'key',
    ]) {
      expect(isSecretKey(key), key).toBe(true);
    }
    for (const key of [
      'max_tokens',
      'tokenizer',
      'tokens',
      'author',
      'keyboard',
      'secretary',
      'passport',
      'path',
      'name',
    ]) {
      expect(isSecretKey(key), key).toBe(false);
    }
  });

  it('takes extra keys and patterns, or only those', () => {
    const redactor = createRedactor({
      secretKeys: ['pin'],
      secretPatterns: ['ACME-[0-9a-f]{8}', '/id:(?<secret>\\d+)/i'],
    });
    expect(redactor.redactValue({ pin: 1234, userPin: '1', pinned: true })).toEqual({
      pin: REDACTED,
      userPin: REDACTED,
      pinned: true,
    });
    expect(redactor.redactText('key ACME-0123abcd, ID:42')).toBe('key [REDACTED], ID:[REDACTED]');
    expect(redactor.redactText('pin=4321')).toBe('pin=[REDACTED]');

    const only = createRedactor({ defaults: false, secretKeys: ['pin'] });
    expect(only.redactValue({ password: 'p', pin: '1', t: GHP })).toEqual({
      password: 'p',
      pin: REDACTED,
      t: GHP,
    });
    expect(DEFAULT_SECRET_KEYS).toContain('password');
  });

  it('refuses unusable configuration', () => {
    expect(() => createRedactor({ secretPatterns: ['(unclosed'] })).toThrow(RedactorConfigError);
    expect(() => createRedactor({ secretPatterns: ['x*'] })).toThrow(/empty string/);
    expect(() => createRedactor({ secretPatterns: ['(a+)+b'] })).toThrow(/refused/);
    expect(() => createRedactor({ secretPatterns: ['/x/g'] })).toThrow(/flags/);
    expect(() => createRedactor({ secretKeys: ['--'] })).toThrow(/no letters/);
  });
});
