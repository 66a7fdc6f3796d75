/**
 * Which documents (config and policy files) the built validators found valid in earlier runs, so
 * a serving gateway started again on the same files skips loading and running them.
 *
 * Why: the config's generated validator is over half a megabyte of code; reading it and its V8
 * code cache, and running it, was the largest single cost of a start-up (measured: about 40 ms
 * of CPU), paid again at every start for the same unchanged file.
 *
 * What is kept: one file, readable and writable by its user only, in the user's state folder.
 * It holds SHA-256 digests only, each of a validator's identity (the digest of its generated
 * code, written by the build) and of a document exactly as it was checked. A document that
 * changed in any way, or a validator from another build, gives another digest, so it is checked
 * in full. Only a valid result is remembered: an invalid document is always checked, and its
 * errors always reported. A file that is unreadable, malformed, of another version or writable
 * by anyone but its user is ignored, and replaced at the next write. Writing happens after the
 * check, asynchronously, and a failure to write is not an error: the next start checks again.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stateFolder } from './stateFolder.js';

/** The format written; a file of another version is ignored (and replaced on the next write). */
const VALID_DOCUMENTS_VERSION = 1;

/**
 * The most digests kept: the documents of a few configs, their policy files, the argument
 * schemas of their conditions and recent edits.
 */
const MAX_ENTRIES = 256;

/** Beside each generated validator: the SHA-256 of its code, written by the build, which names it here. */
export const IDENTITY_SUFFIX = '.sha256';

/**
 * The identity of the generated validator in `file` (the digest the build wrote beside it), or
 * null when there is none (run from source, or an older build): its documents are then always
 * checked in full.
 */
export function generatedIdentity(file: string): string | null {
  try {
    const identity = readFileSync(`${file}${IDENTITY_SUFFIX}`, 'utf8').trim();
    return DIGEST.test(identity) ? identity : null;
  } catch {
    return null;
  }
}

const DIGEST = /^[0-9a-f]{64}$/;

/** Where the digests are kept, when a serving gateway asked for it; nothing is kept otherwise. */
let memo: Memo | undefined;

/**
 * Remembers valid documents in `file` from now on (the serving gateway calls it before it reads
 * its config). Commands that check documents on request (`mcp-warden check`) never call it, so
 * they always run the validators.
 */
export function rememberValidDocuments(options: { readonly file: string }): void {
  if (memo?.file !== options.file) memo = new Memo(options.file);
}

/** Forgets the file set by `rememberValidDocuments`: every document is checked in full again. */
export function forgetValidDocuments(): void {
  memo = undefined;
}

/** The file of valid documents in the state folder `env` names (XDG_STATE_HOME, else ~/.local/state). */
export function validDocumentsFile(env: NodeJS.ProcessEnv, home: string): string {
  return path.join(stateFolder(env, home), 'valid-documents.json');
}

/** A document as one validator sees it: whether it was found valid before, and how to remember it. */
export interface DocumentRecall {
  readonly known: boolean;
  remember(): void;
}

/**
 * What is remembered of `document` as checked by the validator `identity`; undefined when
 * nothing is remembered in this process, or the document is not plain JSON data (only such data
 * has one exact written form to take the digest of).
 */
export function recallDocument(identity: string, document: unknown): DocumentRecall | undefined {
  const current = memo;
  if (current === undefined) return undefined;
  const text = plainJson(document);
  if (text === undefined) return undefined;
  const digest = createHash('sha256').update(identity).update('\n').update(text).digest('hex');
  return { known: current.has(digest), remember: () => current.add(digest) };
}

/**
 * `check` (a validator's errors for a document, none when valid) made to skip documents found
 * valid before and to remember those it finds valid. `identity` names the validator (see
 * `generatedIdentity`), asked once on first use; null: every document is checked in full.
 */
export function rememberingValid<D, E>(
  identity: () => string | null,
  check: (document: D) => readonly E[],
): (document: D) => readonly E[] {
  let id: string | null | undefined;
  return (document) => {
    id ??= identity();
    const recall = id === null ? undefined : recallDocument(id, document);
    if (recall?.known === true) return [];
    const errors = check(document);
    if (errors.length === 0) recall?.remember();
    return errors;
  };
}

/**
 * `document` as JSON text, or undefined when JSON would not say it exactly: a number that is not
 * finite (JSON writes null for it), or anything but null, booleans, numbers, strings, arrays and
 * plain objects.
 */
function plainJson(document: unknown): string | undefined {
  let plain = true;
  // Each value as it is in the document, not as a `toJSON` method would turn it (a Date).
  const text = JSON.stringify(
    document,
    function (this: Record<string, unknown>, key: string, value: unknown) {
      const raw = this[key];
      if (typeof raw === 'number') {
        if (!Number.isFinite(raw)) plain = false;
      } else if (typeof raw === 'object') {
        if (raw !== null && !Array.isArray(raw)) {
          const proto = Object.getPrototypeOf(raw) as unknown;
          if (proto !== Object.prototype && proto !== null) plain = false;
        }
      } else if (typeof raw !== 'string' && typeof raw !== 'boolean') plain = false;
      return value;
    },
  );
  return plain && typeof text === 'string' ? text : undefined;
}

class Memo {
  private entries: string[] | undefined;
  private writing: Promise<void> | undefined;
  private pendingWrite = false;

  constructor(readonly file: string) {}

  has(digest: string): boolean {
    return this.read().includes(digest);
  }

  add(digest: string): void {
    const entries = this.read();
    if (entries.includes(digest)) return;
    entries.push(digest);
    if (entries.length > MAX_ENTRIES) entries.splice(0, entries.length - MAX_ENTRIES);
    this.scheduleWrite();
  }

  /** The digests kept, read once: none when the file is missing, unsafe or not ours. */
  private read(): string[] {
    if (this.entries !== undefined) return this.entries;
    this.entries = [];
    try {
      const stat = statSync(this.file);
      // Writable by someone else, or someone else's: not trusted to say what was checked.
      if ((stat.mode & 0o022) !== 0 || (process.getuid !== undefined && stat.uid !== process.getuid()))
        return this.entries;
      const parsed = JSON.parse(readFileSync(this.file, 'utf8')) as unknown;
      if (typeof parsed !== 'object' || parsed === null) return this.entries;
      const { version, entries } = parsed as { version?: unknown; entries?: unknown };
      if (version !== VALID_DOCUMENTS_VERSION || !Array.isArray(entries) || entries.length > MAX_ENTRIES)
        return this.entries;
      if (!entries.every((entry) => typeof entry === 'string' && DIGEST.test(entry))) return this.entries;
      this.entries = entries as string[];
    } catch {
      // Missing or unreadable: nothing is known, and the next write replaces it.
    }
    return this.entries;
  }

  /** Writes after the current turn of the event loop, off the path of whatever is starting. */
  private scheduleWrite(): void {
    if (this.writing !== undefined) {
      this.pendingWrite = true;
      return;
    }
    this.writing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.write())
      .catch(() => {
        // A cache: the next start checks the documents again.
      })
      .finally(() => {
        this.writing = undefined;
        if (this.pendingWrite) {
          this.pendingWrite = false;
          this.scheduleWrite();
        }
      });
  }

  private async write(): Promise<void> {
    const dir = path.dirname(this.file);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const temp = path.join(
      dir,
      `.${path.basename(this.file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
    );
    const text = `${JSON.stringify({ version: VALID_DOCUMENTS_VERSION, entries: this.entries ?? [] })}\n`;
    try {
      await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
      await rename(temp, this.file);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
  }
}
