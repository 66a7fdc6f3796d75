import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lstat, mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { checkAccount, CredentialStoreError, type CredentialStore } from './store.js';

/** What the file holds: one JSON object, so a future field can sit beside the secrets. */
interface CredentialFile {
  readonly version: 1;
  readonly secrets: Record<string, string>;
}

export interface FileStoreOptions {
  /** The file; its folder is created (0700) on the first write. */
  readonly file: string;
  /**
   * Whether to check POSIX modes and owners. Windows has no such bits (its per-user folder is
   * protected by ACLs instead), so the checks only run elsewhere.
   */
  readonly posix: boolean;
}

/**
 * Secrets in one JSON file readable by the user only: the fallback where no OS credential store
 * is reachable. Every operation reads the file afresh (another mcp-warden may have written it),
 * and every write goes to a temporary file that is renamed over the old one, so a reader never
 * sees half a file and a crash never loses the old one. Writes from this process are queued one
 * after another; two processes writing at the same moment can still lose one of the two writes.
 */
export function createFileStore(options: FileStoreOptions): CredentialStore {
  const { file, posix } = options;
  let queue: Promise<unknown> = Promise.resolve();

  /** Runs `change` on the current contents and writes the result, one change at a time. */
  function update<T>(change: (secrets: Record<string, string>) => { result: T; write: boolean }): Promise<T> {
    const next = queue.then(async () => {
      const secrets = { ...(await readSecrets(file, posix)) };
      const { result, write } = change(secrets);
      if (write) await writeSecrets(file, secrets, posix);
      return result;
    });
    queue = next.catch(() => undefined);
    return next;
  }

  return {
    kind: 'file',
    where: file,
    async get(account) {
      checkAccount(account);
      await queue;
      return (await readSecrets(file, posix))[account];
    },
    async set(account, secret) {
      checkAccount(account);
      return update((secrets) => {
        secrets[account] = secret;
        return { result: undefined, write: true };
      });
    },
    async delete(account) {
      checkAccount(account);
      return update((secrets) => {
        if (!Object.hasOwn(secrets, account)) return { result: false, write: false };
        delete secrets[account];
        return { result: true, write: true };
      });
    },
    async list(prefix) {
      await queue;
      const secrets = await readSecrets(file, posix);
      return Object.keys(secrets)
        .filter((account) => account.startsWith(prefix))
        .sort();
    },
  };
}

async function readSecrets(file: string, posix: boolean): Promise<Readonly<Record<string, string>>> {
  let stats;
  try {
    stats = await lstat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CredentialStoreError(`cannot read the credentials file ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (posix) {
    await checkFolder(path.dirname(file));
    checkSafe(file, stats, 'file');
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new CredentialStoreError(`cannot read the credentials file ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return parse(file, text).secrets;
}

function parse(file: string, text: string): CredentialFile {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the text around the fault, which may be a secret.
    throw new CredentialStoreError(
      `the credentials file ${file} is not valid JSON; fix or remove it (its secrets are then lost)`,
    );
  }
  const secrets = (value as { secrets?: unknown } | null)?.secrets;
  const valid =
    typeof value === 'object' &&
    value !== null &&
    (value as { version?: unknown }).version === 1 &&
    typeof secrets === 'object' &&
    secrets !== null &&
    !Array.isArray(secrets) &&
    Object.values(secrets).every((secret) => typeof secret === 'string');
  if (!valid)
    throw new CredentialStoreError(
      `the credentials file ${file} is not one mcp-warden wrote (expected {"version": 1, "secrets": {…}} with string values)`,
    );
  return { version: 1, secrets: Object.assign(Object.create(null) as Record<string, string>, secrets) };
}

async function writeSecrets(file: string, secrets: Record<string, string>, posix: boolean): Promise<void> {
  const folder = path.dirname(file);
  await mkdir(folder, { recursive: true, mode: 0o700 });
  if (posix) await checkFolder(folder);
  const body: CredentialFile = { version: 1, secrets: sortedCopy(secrets) };
  const temporary = path.join(
    folder,
    `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`,
  );
  // O_EXCL: the temporary name is never one someone else placed (a link to elsewhere).
  const handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    try {
      await handle.writeFile(`${JSON.stringify(body, null, 2)}\n`, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new CredentialStoreError(`cannot write the credentials file ${file}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

function sortedCopy(secrets: Record<string, string>): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const account of Object.keys(secrets).sort()) copy[account] = secrets[account]!;
  return copy;
}

/**
 * Anyone who can write the folder can swap the file for one of theirs (or read the secrets we
 * write next), so a folder others can write, or another user's, is refused like an unsafe file.
 */
async function checkFolder(folder: string): Promise<void> {
  let stats;
  try {
    stats = await lstat(folder);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  checkSafe(folder, stats, 'folder');
}

function checkSafe(target: string, stats: import('node:fs').Stats, what: 'file' | 'folder'): void {
  const uid = process.getuid?.();
  if (what === 'file' && !stats.isFile())
    throw new CredentialStoreError(
      `the credentials file ${target} is not a regular file (a link or a folder); remove it and store the secrets again`,
    );
  if (uid !== undefined && stats.uid !== uid)
    throw new CredentialStoreError(
      `the credentials ${what} ${target} belongs to another user (uid ${stats.uid}, you are ${uid}); ` +
        `mcp-warden only keeps secrets in a ${what} you own`,
    );
  const unsafe = what === 'file' ? stats.mode & 0o077 : stats.mode & 0o022;
  if (unsafe !== 0)
    throw new CredentialStoreError(
      what === 'file'
        ? `the credentials file ${target} can be read or written by other users (mode ${octal(stats.mode)}); ` +
            `make it yours alone with: chmod 600 ${shellQuote(target)}`
        : `the credentials folder ${target} can be written by other users (mode ${octal(stats.mode)}); ` +
            `make it yours alone with: chmod 700 ${shellQuote(target)}`,
    );
}

function octal(mode: number): string {
  return `0${(mode & 0o777).toString(8)}`;
}

function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}
