import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';

const load = (text: string, env: Record<string, string> = {}) =>
  parseConfigText(`${text}servers:\n  a: { command: x }\n`, { file: '/tmp/c.yaml', env }).config;
const KEY = 'listen: { http: 127.0.0.1:0, sessionKey: 0123456789abcdef0123456789abcdef }\n';

describe('store in the config', () => {
  it('reads a URL with its password from the environment, and shows it without the password', () => {
    const config = load(`store: redis://:\${REDIS_PASSWORD}@redis.internal:6380/2\n${KEY}`, {
      REDIS_PASSWORD: 's3cret',
    });
    expect(config.store).toEqual({
      url: 'redis://:s3cret@redis.internal:6380/2',
      shown: 'redis://:***@redis.internal:6380/2',
      timeoutMs: 2_000,
      prefix: 'mcp-warden',
    });
  });

  it('reads the object form with its timeout and prefix, rediss:// included', () => {
    const config = load(`store: { url: 'rediss://redis:6379', timeout: 500ms, prefix: team-a }\n${KEY}`);
    expect(config.store).toMatchObject({ url: 'rediss://redis:6379', timeoutMs: 500, prefix: 'team-a' });
  });

  it('refuses what is not a Redis URL, a database that is not a number, and a listener without sessionKey, naming the line and key', () => {
    expect(() => load(`store: http://redis:6379\n${KEY}`)).toThrow(/c\.yaml:1.*store/s);
    expect(() => load(`store: redis://redis:6379/zero\n${KEY}`)).toThrow(
      /c\.yaml:1.*store.*database after the host must be a number/s,
    );
    expect(() => load('store: redis://redis:6379\nlisten: { http: 127.0.0.1:0 }\n')).toThrow(
      /c\.yaml:1.*store.*needs listen\.sessionKey/s,
    );
  });

  it('is absent when not written', () => {
    expect(load(KEY).store).toBeUndefined();
  });
});
