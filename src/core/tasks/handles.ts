import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';

/**
 * What a task handle stands for: one task of one peer, seen by one owner. The format knows
 * nothing of the method names that carry it (`tasks/get` today, another extension's names
 * later), so the same handles serve any protocol revision that has tasks.
 */
export interface TaskRef {
  /** The peer that holds the task: an upstream server's name. */
  readonly server: string;
  /** The task's id as that peer gave it. */
  readonly taskId: string;
  /**
   * Who may use the handle: the host session that created the task. A handle presented by
   * anyone else is refused as if it did not exist, so one principal never sees another's tasks.
   */
  readonly owner: string;
}

/** A position in a list that spans several peers: which peer, its own cursor, how far into its page. */
export interface ListPosition {
  readonly server: string;
  readonly cursor: string | undefined;
  readonly skip: number;
  readonly owner: string;
}

/** A sealed string is refused beyond this length before any work is done on it. */
export const MAX_SEALED_CHARS = 4096;

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What is sealed: a task, or a list position. The kind is inside, so one is never taken for the other. */
type Sealed =
  | { readonly k: 't'; readonly s: string; readonly t: string; readonly o: string }
  | {
      readonly k: 'c';
      readonly s: string;
      readonly c: string | undefined;
      readonly n: number;
      readonly o: string;
    };

/**
 * Seals task references and list positions into opaque strings (base64url), and opens them.
 *
 * AES-256-GCM under a random key made for this process: the host can neither read what a handle
 * holds (which server, the upstream's own id) nor make or alter one (the tag fails). The IV is
 * an HMAC of the plaintext under a second key (a synthetic IV), so the same task always gets the
 * same handle: the handle a task was created with is the one `tasks/list` and status
 * notifications show, which is what lets a host match them. Tasks of two servers with the same
 * id differ in the server sealed with them, so their handles differ too.
 *
 * Handles end with the process: a restarted gateway cannot open the old ones, and says so.
 */
export class TaskHandles {
  private readonly encryptionKey: Buffer;
  private readonly ivKey: Buffer;

  /** `key`: 64 bytes (tests give one; production uses a fresh random key). */
  constructor(key: Buffer = randomBytes(64)) {
    if (key.length !== 64) throw new Error('a task handle key is 64 bytes');
    this.encryptionKey = key.subarray(0, 32);
    this.ivKey = key.subarray(32);
  }

  handle(ref: TaskRef): string {
    return this.seal({ k: 't', s: ref.server, t: ref.taskId, o: ref.owner });
  }

  /** The task a handle stands for, when `owner` made it; undefined for anything else. */
  openHandle(handle: unknown, owner: string): TaskRef | undefined {
    const opened = this.open(handle);
    if (opened?.k !== 't' || opened.o !== owner) return undefined;
    return { server: opened.s, taskId: opened.t, owner: opened.o };
  }

  cursor(position: ListPosition): string {
    return this.seal({ k: 'c', s: position.server, c: position.cursor, n: position.skip, o: position.owner });
  }

  /** The list position a cursor stands for, when `owner` was given it; undefined for anything else. */
  openCursor(cursor: unknown, owner: string): ListPosition | undefined {
    const opened = this.open(cursor);
    if (opened?.k !== 'c' || opened.o !== owner) return undefined;
    return { server: opened.s, cursor: opened.c, skip: opened.n, owner: opened.o };
  }

  private seal(payload: Sealed): string {
    const plain = Buffer.from(JSON.stringify(payload), 'utf8');
    const iv = createHmac('sha256', this.ivKey).update(plain).digest().subarray(0, IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    cipher.setAAD(Buffer.of(VERSION));
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return Buffer.concat([Buffer.of(VERSION), iv, body, cipher.getAuthTag()]).toString('base64url');
  }

  private open(text: unknown): Sealed | undefined {
    if (typeof text !== 'string' || text.length > MAX_SEALED_CHARS || !/^[A-Za-z0-9_-]+$/.test(text))
      return undefined;
    const bytes = Buffer.from(text, 'base64url');
    if (bytes.length < 1 + IV_BYTES + TAG_BYTES + 2 || bytes[0] !== VERSION) return undefined;
    const iv = bytes.subarray(1, 1 + IV_BYTES);
    const tag = bytes.subarray(bytes.length - TAG_BYTES);
    const body = bytes.subarray(1 + IV_BYTES, bytes.length - TAG_BYTES);
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.encryptionKey, iv);
      decipher.setAAD(Buffer.of(VERSION));
      decipher.setAuthTag(tag);
      const plain = Buffer.concat([decipher.update(body), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as Sealed;
    } catch {
      // A wrong tag (forged, altered, or from another process): not ours.
      return undefined;
    }
  }
}
