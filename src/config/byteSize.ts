import { describeValue } from './schemaErrors.js';

const SIZE_UNITS = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 } as const;
const SIZE_FORMS = 'an integer number of bytes or a string like "512KiB", "32MiB" or "1GiB"';
const MIN_SIZE_BYTES = 1024;
const MAX_SIZE_BYTES = 1024 ** 3;

/**
 * A size limit in bytes (`gateway.maxMessageSize`, `audit.maxSize`), or why the value is none.
 * Units are 1024-based and spelled KiB/MiB/GiB so there is no doubt which; `32MB` is rejected
 * with the accepted forms. From 1 KiB to 1 GiB.
 */
export function parseByteSize(value: unknown): { readonly bytes: number } | { readonly problem: string } {
  if (typeof value !== 'string' && typeof value !== 'number')
    return { problem: `expected a size (${SIZE_FORMS}), got ${describeValue(value)}` };
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  let bytes: number | undefined;
  if (typeof value === 'number') {
    bytes = Number.isInteger(value) ? value : undefined;
  } else {
    const match = /^(\d+)(?:\.(\d+))?(B|KiB|MiB|GiB)$/.exec(value);
    if (match !== null) {
      const [, whole = '', fraction = '', unit] = match;
      const scaled = Number(whole + fraction) * SIZE_UNITS[unit as keyof typeof SIZE_UNITS];
      bytes = Math.floor(scaled / 10 ** fraction.length);
    }
  }
  if (bytes === undefined) return { problem: `invalid size ${shown}: expected ${SIZE_FORMS}` };
  if (bytes < MIN_SIZE_BYTES || bytes > MAX_SIZE_BYTES) {
    const range = `from 1KiB (${MIN_SIZE_BYTES} bytes) to 1GiB (${MAX_SIZE_BYTES} bytes)`;
    return { problem: `invalid size ${shown}: must be ${range}` };
  }
  return { bytes };
}
