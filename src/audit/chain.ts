import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical.js';

/** The hash-chain fields of a record, as the writer needs them to continue a chain. */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

const HEX64 = /^[0-9a-f]{64}$/;

export function isHash(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * The line for a record whose body (everything but `hash`) is `body`: the canonical JSON of the
 * body with `"hash"` appended as its last member, and a newline. Writing the canonical text
 * itself, rather than a prettier key order, is what makes the parse round trip in `verify`
 * reproduce the hashed bytes exactly (see canonical.ts).
 */
export function sealRecord(body: Record<string, unknown>): { line: string; hash: string } {
  const canonical = canonicalJson(body);
  const hash = sha256Hex(canonical);
  // The body always has members (seq, ts, ...), so the canonical text ends with `...}` after at
  // least one member and a comma is correct.
  const line = `${canonical.slice(0, -1)},"hash":"${hash}"}\n`;
  return { line, hash };
}

/** The hash a parsed record should carry: SHA-256 of the canonical form without `hash`. */
export function expectedHash(record: Record<string, unknown>): string {
  const { hash: _hash, ...body } = record;
  return sha256Hex(canonicalJson(body));
}

/** `seq` and `hash` of a parsed line, when it looks like a record (its hash is not checked). */
export function chainHeadOf(parsed: unknown): ChainHead | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { seq, hash } = parsed as Record<string, unknown>;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0 || !isHash(hash)) return undefined;
  return { seq, hash };
}
