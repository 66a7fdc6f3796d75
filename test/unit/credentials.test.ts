import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { credentialsFilePath, openCredentialStore } from '../../src/lib/credentials/index.js';
import { createKeyringStore, type KeyringModule } from '../../src/lib/credentials/keyringStore.js';

const folders: string[] = [];
function tempFolder(): string {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'mcp-warden-credentials-'));
  folders.push(folder);
  return folder;
}
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function recordingLogger(): { warn: (message: string) => void; warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (message: string) => warnings.push(message) };
}

/** An environment with no D-Bus session: the Secret Service cannot be reached. */
function headless(home: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: home, XDG_CONFIG_HOME: path.join(home, 'config') };
}

const posix = process.platform !== 'win32';

describe('the fallback file', () => {
  it('is used without a D-Bus session, with one warning naming it, and holds secrets mode 0600 in a 0700 folder', async () => {
    const home = tempFolder();
    const logger = recordingLogger();
    const store = await openCredentialStore({ env: headless(home), logger, platform: 'linux', home });
    const file = path.join(home, 'config', 'mcp-warden', 'credentials.json');
    expect(store.kind).toBe('file');
    expect(store.where).toBe(file);
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toContain(file);
    expect(logger.warnings[0]).toContain('D-Bus');

    await store.set('secret:API_KEY', 'sk-one');
    await store.set('oauth:linear', 'tokens');
    expect(await store.get('secret:API_KEY')).toBe('sk-one');
    expect(await store.get('secret:MISSING')).toBeUndefined();
    expect(await store.list('secret:')).toEqual(['secret:API_KEY']);
    expect(await store.delete('secret:API_KEY')).toBe(true);
    expect(await store.delete('secret:API_KEY')).toBe(false);
    expect(await store.list('')).toEqual(['oauth:linear']);
    if (posix) {
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    }

    // A second open in the same process with the same logger does not warn again.
    await openCredentialStore({ env: headless(home), logger, platform: 'linux', home });
    expect(logger.warnings).toHaveLength(1);
  });

  it.skipIf(!posix)('refuses a file others can read, naming it and the chmod that fixes it', async () => {
    const home = tempFolder();
    const file = path.join(home, 'credentials.json');
    writeFileSync(file, JSON.stringify({ version: 1, secrets: { 'secret:A': 'x' } }), { mode: 0o644 });
    chmodSync(file, 0o644);
    const store = await openCredentialStore({
      env: { MCP_WARDEN_CREDENTIALS_FILE: file },
      prefer: 'file',
      home,
    });
    await expect(store.get('secret:A')).rejects.toThrow(
      `can be read or written by other users (mode 0644); make it yours alone with: chmod 600 ${file}`,
    );
    await expect(store.set('secret:B', 'y')).rejects.toThrow('chmod 600');
    chmodSync(file, 0o600);
    expect(await store.get('secret:A')).toBe('x');
  });

  it.skipIf(!posix)('refuses a folder others can write', async () => {
    const home = tempFolder();
    const folder = path.join(home, 'shared');
    mkdirSync(folder, { mode: 0o777 });
    chmodSync(folder, 0o777);
    const store = await openCredentialStore({
      env: { MCP_WARDEN_CREDENTIALS_FILE: path.join(folder, 'credentials.json') },
      prefer: 'file',
      home,
    });
    await expect(store.set('secret:A', 'x')).rejects.toThrow(`chmod 700 ${folder}`);
  });

  it('says a damaged file is damaged without quoting it', async () => {
    const home = tempFolder();
    const file = path.join(home, 'credentials.json');
    writeFileSync(file, '{"version": 1, "secrets": {"secret:A": "sk-live-123"', { mode: 0o600 });
    const store = await openCredentialStore({
      env: { MCP_WARDEN_CREDENTIALS_FILE: file },
      prefer: 'file',
      home,
    });
    const error = await store.get('secret:A').catch((caught: unknown) => caught as Error);
    expect((error as Error).message).toContain(`${file} is not valid JSON`);
    expect((error as Error).message).not.toContain('sk-live');
  });

  it('keeps every write of concurrent sets, and writes atomically (no temporary file left)', async () => {
    const home = tempFolder();
    const file = path.join(home, 'folder', 'credentials.json');
    const store = await openCredentialStore({
      env: { MCP_WARDEN_CREDENTIALS_FILE: file },
      prefer: 'file',
      home,
    });
    await Promise.all(Array.from({ length: 20 }, (_, index) => store.set(`secret:K${index}`, `v${index}`)));
    expect(await store.list('secret:')).toHaveLength(20);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ version: 1 });
    expect(
      (await import('node:fs')).readdirSync(path.dirname(file)).filter((name) => name.endsWith('.tmp')),
    ).toEqual([]);
  });

  it('is placed in each OS its own config folder', () => {
    expect(credentialsFilePath({ env: {}, platform: 'linux', home: '/home/ann' })).toBe(
      '/home/ann/.config/mcp-warden/credentials.json',
    );
    expect(
      credentialsFilePath({ env: { XDG_CONFIG_HOME: '/x' }, platform: 'linux', home: '/home/ann' }),
    ).toBe(path.join('/x', 'mcp-warden', 'credentials.json'));
    expect(credentialsFilePath({ env: {}, platform: 'darwin', home: '/Users/ann' })).toBe(
      path.join('/Users/ann', 'Library', 'Application Support', 'mcp-warden', 'credentials.json'),
    );
    expect(
      credentialsFilePath({
        env: { APPDATA: '/c/Users/ann/AppData/Roaming' },
        platform: 'win32',
        home: '/c',
      }),
    ).toBe(path.join('/c/Users/ann/AppData/Roaming', 'mcp-warden', 'credentials.json'));
  });
});

describe('choosing the store', () => {
  it('refuses an unknown MCP_WARDEN_CREDENTIALS', async () => {
    await expect(openCredentialStore({ env: { MCP_WARDEN_CREDENTIALS: 'vault' } })).rejects.toThrow(
      'MCP_WARDEN_CREDENTIALS is "vault"; use "keyring" or "file"',
    );
  });

  it('fails, rather than falling back, when the OS store is asked for by name and is unreachable', async () => {
    const home = tempFolder();
    await expect(
      openCredentialStore({
        env: { ...headless(home), MCP_WARDEN_CREDENTIALS: 'keyring' },
        platform: 'linux',
        home,
      }),
    ).rejects.toThrow(/MCP_WARDEN_CREDENTIALS=keyring.*D-Bus/);
  });

  it.skipIf(process.platform !== 'linux')(
    'falls back within the time limit when the session bus never answers',
    async () => {
      const home = tempFolder();
      const socket = path.join(home, 'bus');
      const silent = net.createServer(() => {}).listen(socket);
      await new Promise((resolve) => silent.once('listening', resolve));
      try {
        const logger = recordingLogger();
        const store = await openCredentialStore({
          env: { ...headless(home), DBUS_SESSION_BUS_ADDRESS: `unix:path=${socket}` },
          logger,
          home,
          probeTimeoutMs: 1000,
        });
        expect(store.kind).toBe('file');
        expect(logger.warnings[0]).toContain('did not answer within 1000 ms');
      } finally {
        silent.close();
      }
    },
  );
});

/** An OS store in memory, with Windows' limit on the size of one secret. */
function fakeKeyring(limit: number): { module: KeyringModule; entries: Map<string, string> } {
  const entries = new Map<string, string>();
  class AsyncEntry {
    readonly key: string;
    constructor(service: string, account: string) {
      this.key = `${service}/${account}`;
    }
    getPassword(): Promise<string | null> {
      return Promise.resolve(entries.get(this.key) ?? null);
    }
    setPassword(password: string): Promise<void> {
      if (password.length > limit) return Promise.reject(new Error('The stub received bad data.'));
      entries.set(this.key, password);
      return Promise.resolve();
    }
    deleteCredential(): Promise<boolean> {
      return Promise.resolve(entries.delete(this.key));
    }
  }
  return { module: { AsyncEntry } as unknown as KeyringModule, entries };
}

describe('the OS store', () => {
  it('splits a secret longer than one entry may hold, and keeps an index of names for listing', async () => {
    const { module, entries } = fakeKeyring(100);
    const store = createKeyringStore({ module, where: 'Windows Credential Manager', chunkSize: 100 });
    const long = 'x'.repeat(250) + 'end';
    await store.set('oauth:github', long);
    await store.set('secret:A', 'short');
    expect(await store.get('oauth:github')).toBe(long);
    expect(await store.list('')).toEqual(['oauth:github', 'secret:A']);
    expect(await store.list('secret:')).toEqual(['secret:A']);
    expect([...entries.values()].every((value) => value.length <= 100)).toBe(true);

    await store.set('oauth:github', 'now short');
    expect(await store.get('oauth:github')).toBe('now short');
    expect([...entries.keys()].filter((key) => key.includes('.part/'))).toEqual([]);

    expect(await store.delete('oauth:github')).toBe(true);
    expect(await store.get('oauth:github')).toBeUndefined();
    expect(await store.list('')).toEqual(['secret:A']);
  });

  it('names the store in its errors', async () => {
    const { module } = fakeKeyring(3);
    const store = createKeyringStore({ module, where: 'Secret Service', chunkSize: 1000 });
    await expect(store.set('secret:A', 'too long')).rejects.toThrow(
      'the Secret Service refused to store a secret',
    );
  });

  it('refuses account names it keeps for itself', async () => {
    const { module } = fakeKeyring(100);
    const store = createKeyringStore({ module, where: 'Secret Service', chunkSize: 100 });
    await expect(store.set('.index', 'x')).rejects.toThrow('must not be empty, start with "."');
  });
});
