import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { createFileStore } from './fileStore.js';
import { createKeyringStore, type KeyringModule } from './keyringStore.js';
import { fileLocks } from './lock.js';
import {
  CREDENTIAL_SERVICE,
  CredentialStoreError,
  type CredentialLogger,
  type CredentialStore,
} from './store.js';

export {
  CREDENTIAL_SERVICE,
  CredentialStoreError,
  type CredentialLogger,
  type CredentialStore,
} from './store.js';

/** `MCP_WARDEN_CREDENTIALS=keyring|file` picks the store instead of trying the OS one first. */
export const CREDENTIALS_ENV = 'MCP_WARDEN_CREDENTIALS';
/** `MCP_WARDEN_CREDENTIALS_FILE=PATH` puts the fallback file elsewhere (tests, several profiles). */
export const CREDENTIALS_FILE_ENV = 'MCP_WARDEN_CREDENTIALS_FILE';

export interface OpenCredentialStoreOptions {
  /** Where the overrides, the config folder and D-Bus are looked up; `process.env` by default. */
  readonly env?: NodeJS.ProcessEnv;
  /** Receives the one warning when secrets go to the file because the OS store is unreachable. */
  readonly logger?: CredentialLogger;
  /**
   * Which store to use, without trying the other: 'keyring' fails with an error naming the
   * reason when the OS store is unreachable, 'file' never touches it. Unset: the environment's
   * `MCP_WARDEN_CREDENTIALS`, else the OS store when reachable and the file when not.
   */
  readonly prefer?: 'keyring' | 'file';
  /** For tests: the platform and home folder the paths are computed for. */
  readonly platform?: NodeJS.Platform;
  readonly home?: string;
  /**
   * How long the OS store may take to answer a first read before it counts as unreachable
   * (a Secret Service that never answers); 3 s by default.
   */
  readonly probeTimeoutMs?: number;
}

/** The loggers already told about the fallback file, so a process says it once. */
const warned = new WeakSet<CredentialLogger>();

/**
 * Opens where mcp-warden keeps secrets: the OS credential store (macOS Keychain, Windows
 * Credential Manager, the Secret Service on Linux) when it answers, else a file readable by the
 * user only in their config folder, with one warning naming that file. Open it once per process
 * and pass it to whatever needs it.
 */
export async function openCredentialStore(
  options: OpenCredentialStoreOptions = {},
): Promise<CredentialStore> {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const choice = options.prefer ?? chosenByEnv(env);
  const file = credentialsFilePath({ env, platform, home: options.home ?? os.homedir() });
  // Locks live beside the file, whichever store holds the secrets.
  const exclusive = fileLocks(path.join(path.dirname(file), 'locks'));
  const fileStore = (): CredentialStore => ({
    ...createFileStore({ file, posix: platform !== 'win32' }),
    exclusive,
  });
  if (choice === 'file') return fileStore();

  const opened = await openKeyring({ env, platform, timeoutMs: options.probeTimeoutMs ?? 3000 });
  if (opened.store !== undefined) return { ...opened.store, exclusive };
  if (choice === 'keyring')
    throw new CredentialStoreError(
      `the OS credential store was asked for (${CREDENTIALS_ENV}=keyring), but it cannot be used: ${opened.reason}`,
    );
  const { logger } = options;
  if (logger !== undefined && !warned.has(logger)) {
    warned.add(logger);
    logger.warn(
      `the OS credential store cannot be used (${opened.reason}); secrets are kept in ${file}, ` +
        `readable by you only. Set ${CREDENTIALS_ENV}=file to choose the file and silence this warning.`,
    );
  }
  return fileStore();
}

function chosenByEnv(env: NodeJS.ProcessEnv): 'keyring' | 'file' | undefined {
  const value = env[CREDENTIALS_ENV];
  if (value === undefined || value === '') return undefined;
  if (value === 'keyring' || value === 'file') return value;
  throw new CredentialStoreError(
    `${CREDENTIALS_ENV} is "${value}"; use "keyring" or "file" (or leave it unset)`,
  );
}

/**
 * The fallback file: `$MCP_WARDEN_CREDENTIALS_FILE` when set, else `credentials.json` in the
 * user's config folder for mcp-warden (`$XDG_CONFIG_HOME` or `~/.config` on Linux,
 * `~/Library/Application Support` on macOS, `%APPDATA%` on Windows).
 */
export function credentialsFilePath(options: {
  readonly env: NodeJS.ProcessEnv;
  readonly platform: NodeJS.Platform;
  readonly home: string;
}): string {
  const { env, platform, home } = options;
  const override = env[CREDENTIALS_FILE_ENV];
  if (override !== undefined && override !== '') return path.resolve(override);
  const base =
    platform === 'darwin'
      ? path.join(home, 'Library', 'Application Support')
      : platform === 'win32'
        ? (env.APPDATA ?? path.join(home, 'AppData', 'Roaming'))
        : env.XDG_CONFIG_HOME !== undefined && path.isAbsolute(env.XDG_CONFIG_HOME)
          ? env.XDG_CONFIG_HOME
          : path.join(home, '.config');
  return path.join(base, CREDENTIAL_SERVICE, 'credentials.json');
}

type Opened = { store: CredentialStore; reason?: undefined } | { store?: undefined; reason: string };

const PROBE_ACCOUNT = '.probe';

async function openKeyring(options: {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  timeoutMs: number;
}): Promise<Opened> {
  const { env, platform, timeoutMs } = options;
  const require = createRequire(import.meta.url);
  let modulePath: string;
  let module: KeyringModule;
  try {
    modulePath = require.resolve('@napi-rs/keyring');
  } catch {
    return { reason: 'the optional package @napi-rs/keyring is not installed' };
  }
  const linux = platform !== 'darwin' && platform !== 'win32';
  if (linux) {
    // Without a session bus there is no Secret Service to ask, and asking would only fail.
    const runtime = env.XDG_RUNTIME_DIR;
    const bus = env.DBUS_SESSION_BUS_ADDRESS;
    if (
      (bus === undefined || bus === '') &&
      (runtime === undefined || !existsSync(path.join(runtime, 'bus')))
    )
      return {
        reason: 'no D-Bus session bus to reach a Secret Service (DBUS_SESSION_BUS_ADDRESS is not set)',
      };
    // Connecting to D-Bus happens synchronously inside the native library, and a bus or a
    // Secret Service that never answers would block this process for good; so the first
    // contact is made by a child process that can be killed when it takes too long.
    const failure = await probeInChild({ modulePath, env, timeoutMs });
    if (failure !== undefined) return { reason: failure };
  }
  try {
    module = require(modulePath) as KeyringModule;
  } catch (error) {
    return { reason: `@napi-rs/keyring cannot be loaded on this system (${firstLine(error)})` };
  }
  const entryOptions = linux ? { linux: { store: 'secret-service' as const } } : undefined;
  if (!linux) {
    const failure = await probeHere(module, timeoutMs);
    if (failure !== undefined) return { reason: failure };
  }
  const where =
    platform === 'darwin'
      ? 'macOS Keychain'
      : platform === 'win32'
        ? 'Windows Credential Manager'
        : 'Secret Service';
  return {
    store: createKeyringStore({
      module,
      where,
      entryOptions,
      chunkSize: platform === 'win32' ? 1000 : 1_000_000,
    }),
  };
}

async function probeHere(module: KeyringModule, timeoutMs: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const entry = new module.AsyncEntry(CREDENTIAL_SERVICE, PROBE_ACCOUNT);
    const answered = entry.getPassword().then(() => undefined);
    const late = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`it did not answer within ${timeoutMs} ms`), timeoutMs);
    });
    return await Promise.race([answered, late]);
  } catch (error) {
    return firstLine(error);
  } finally {
    clearTimeout(timer);
  }
}

/** The child reads one entry that does not exist and says "ok", or prints why it could not. */
const PROBE_SCRIPT = `
const { AsyncEntry } = require(process.argv[1]);
new AsyncEntry(${JSON.stringify(CREDENTIAL_SERVICE)}, ${JSON.stringify(PROBE_ACCOUNT)}, { linux: { store: 'secret-service' } })
  .getPassword()
  .then(() => process.stdout.write('ok'), (error) => { process.stderr.write(String(error && error.message)); process.exitCode = 1; });
`;

function probeInChild(options: {
  modulePath: string;
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
}): Promise<string | undefined> {
  const { modulePath, env, timeoutMs } = options;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['-e', PROBE_SCRIPT, modulePath], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err = (err + chunk).slice(-2000)));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(`the Secret Service did not answer within ${timeoutMs} ms`);
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve(`cannot start a probe of the Secret Service (${error.message})`);
    });
    child.on('close', () => {
      clearTimeout(timer);
      if (out === 'ok') resolve(undefined);
      else resolve(firstLine(err.trim() === '' ? 'the probe exited without an answer' : err));
    });
  });
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split('\n').find((line) => line.trim() !== '') ?? text).trim();
}
