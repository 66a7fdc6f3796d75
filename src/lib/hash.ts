import * as crypto from 'node:crypto';

const HEX64 = /^[0-9a-f]{64}$/;

export function isHash(value: unknown): value is string {
  return typeof value === 'string' && HEX64.test(value);
}

// `crypto.hash` (Node 20.12+) hashes a string in one call, without a Hash object per record.
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex') => string }).hash;

export function sha256Hex(text: string): string {
  return oneShot !== undefined
    ? oneShot('sha256', text, 'hex')
    : crypto.createHash('sha256').update(text, 'utf8').digest('hex');
}
