import { isHash, sha256Hex } from '../../lib/hash.js';
import { canonicalJson } from '../../lib/canonicalJson.js';

/** The hash-chain fields of a record, as the writer needs them to continue a chain. */
export interface ChainHead {
  readonly seq: number;
  readonly hash: string;
}

/** What ends every record line: the record's hash, as its last member. */
const HASH_MEMBER = ',"hash":"';
/** `,"hash":"` + 64 hex digits + `"}` */
const HASH_SUFFIX_LENGTH = HASH_MEMBER.length + 64 + 2;

/**
 * JSON text of a record's fields, never throwing (an audit append must not fail on an odd
 * argument): `JSON.stringify` when it can, else the canonical form, which maps cycles, bigints
 * and throwing getters to text (canonical.ts).
 */
export function recordJson(fields: Record<string, unknown>): string {
  try {
    const text = JSON.stringify(fields);
    if (typeof text === 'string') return text;
  } catch {
    // Below.
  }
  return canonicalJson(fields);
}

/**
 * Seals the JSON text of a record without `hash` (an object with at least one member): the hash
 * is the SHA-256 of the line's own bytes up to where `"hash"` is appended as the last member.
 * Hashing the exact text written, rather than a canonical form of the parsed record, makes
 * verification independent of how a JSON library re-serialises, and any edit (even of
 * whitespace or key order) shows.
 */
export function sealRecord(json: string): { line: string; hash: string } {
  return sealOpenRecord(json.slice(0, -1));
}

/** `sealRecord` of `open` + `}`: for a writer that builds the text without its closing brace. */
export function sealOpenRecord(open: string): { line: string; hash: string } {
  const hash = sha256Hex(open);
  return { line: `${open}${sealSuffix(hash)}`, hash };
}

/** What follows a record's open text in its line, all ASCII: the hash member, `"}`, a newline. */
export function sealSuffix(hash: string): string {
  return `${HASH_MEMBER}${hash}"}\n`;
}

/** Bytes of `sealSuffix`. */
export const SEAL_SUFFIX_BYTES = HASH_SUFFIX_LENGTH + 1;

/**
 * The hash a record line claims (its last member) and the hash its bytes have; undefined when
 * the line does not end with a `"hash"` member of 64 hex digits, as every sealed line does.
 */
export function lineHashes(line: string): { claimed: string; actual: string } | undefined {
  const start = line.length - HASH_SUFFIX_LENGTH;
  if (start < 2 || !line.startsWith(HASH_MEMBER, start) || !line.endsWith('"}')) return undefined;
  const claimed = line.slice(start + HASH_MEMBER.length, line.length - 2);
  if (!isHash(claimed)) return undefined;
  return { claimed, actual: sha256Hex(line.slice(0, start)) };
}

/** `seq` and `hash` of a parsed line, when it looks like a record (its hash is not checked). */
export function chainHeadOf(parsed: unknown): ChainHead | undefined {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const { seq, hash } = parsed as Record<string, unknown>;
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 0 || !isHash(hash)) return undefined;
  return { seq, hash };
}
