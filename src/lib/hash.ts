import * as crypto from 'node:crypto';

const HEX64 = /^[0-9a-f]{64}$/;

export function isHash(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

// `crypto.hash` (Node 20.12+) hashes a string in one call, without a Hash object per record.
const oneShot = (
  crypto as { hash?: (algorithm: string, data: string | Uint8Array, encoding: 'hex') => string }
).hash;

export function sha256Hex(text: string): string {
  return oneShot !== undefined
    ? oneShot('sha256', text, 'hex')
    : crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}

/** `sha256Hex` of text already encoded as UTF-8 (the same hash as of the text itself). */
export function sha256HexOfBytes(bytes: Uint8Array): string {
  return oneShot !== undefined
    ? oneShot('sha256', bytes, 'hex')
    : crypto.createHash('sha256').update(bytes).digest('hex');
}
