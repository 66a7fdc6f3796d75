/**
 * Durations in the config file: a decimal number with a unit. Kept deliberately small (no
 * `1h30m`, no `d`) so every accepted form is listed in one message. A bare number is refused by
 * the loader (see `bareNumberMessage`), except in the one key hosts define as milliseconds.
 */

/**
 * Node's timers store delays as signed 32-bit integers; a larger delay fires after 1 ms with a
 * warning, which would turn a generous timeout into an immediate one. Rejecting it is safer.
 */
export const MAX_DURATION_MS = 2_147_483_647;

/** The accepted forms, as users read them in error messages. */
export const DURATION_FORMS = 'a string like "500ms", "30s", "2m", "1h" or "1.5s"';

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;
type Unit = keyof typeof UNIT_MS;

const FORM = /^(\d+)(?:\.(\d+))?(ms|s|m|h)$/;

/**
 * Why a bare number is refused where a duration is expected, and what to write instead. Hosts
 * disagree on the unit of a bare number (Cline writes seconds, Claude Code milliseconds), and
 * read as milliseconds a number meant as seconds ends everything almost at once: so the message
 * says what the number would do (`effect`, e.g. "end every call after", followed by the amount) and gives both spellings.
 * A number of 1000 or more reads best as milliseconds, so that reading is offered first, in
 * units. `hostsWriteSeconds` names the hosts' habit, for the key that hosts' own files carry.
 */
export function bareNumberMessage(
  value: number,
  options: { readonly effect: string; readonly hostsWriteSeconds?: boolean },
): string {
  const { effect, hostsWriteSeconds = false } = options;
  if (hostsWriteSeconds) {
    return `a number here is milliseconds, so ${value} would ${effect} ${value} ms; some hosts (such as Cline) write seconds in this key: write "${value}s" for seconds, or "${value}ms" if that is meant`;
  }
  // A large number was most likely meant as milliseconds: offer that reading first, in units.
  if (value >= 1000 && Number.isInteger(value)) {
    const inUnits = formatDuration(value);
    const also = inUnits === `${value}ms` ? '' : ` (or "${value}ms")`;
    return `a number without a unit is not accepted here, since it could mean seconds or milliseconds: write "${inUnits}"${also} if milliseconds are meant, or "${value}s" for seconds`;
  }
  const asSeconds =
    value * 1000 <= MAX_DURATION_MS ? `"${value}s" (that is, ${value * 1000}ms)` : `"${value}s"`;
  return `a number without a unit is not accepted here: read as milliseconds, ${value} would ${effect} ${value} ms; write ${asSeconds} for seconds, or "${value}ms" if that is meant`;
}

/**
 * Milliseconds for a duration written as a number (already ms) or a string such as `1.5s`.
 * Throws an Error whose message names the value and the accepted forms.
 */
export function parseDuration(value: string | number): number {
  let ms: number;
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`invalid duration ${String(value)}: expected ${DURATION_FORMS}`);
    }
    // `-0` passes the checks above; normalize it so it never leaks into arithmetic or output.
    ms = value === 0 ? 0 : value;
  } else if (typeof value === 'string') {
    const match = FORM.exec(value);
    if (match === null) {
      throw new Error(`invalid duration ${JSON.stringify(value)}: expected ${DURATION_FORMS}`);
    }
    const [, whole = '', fraction = '', unit] = match;
    // Scale the decimal digits as an integer and divide once, so "1.1s" is exactly 1100 rather
    // than 1100.0000000000002.
    ms = (Number(whole + fraction) * UNIT_MS[unit as Unit]) / 10 ** fraction.length;
  } else {
    // The signature says string | number, but values come from parsed files and JS callers.
    throw new Error(`invalid duration of type ${typeof value}: expected ${DURATION_FORMS}`);
  }
  if (ms > MAX_DURATION_MS) {
    const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
    throw new Error(
      `invalid duration ${shown}: at most ${MAX_DURATION_MS} ms (about 24.8 days) is supported`,
    );
  }
  return ms;
}

const SHOWN_UNITS = [
  ['h', UNIT_MS.h],
  ['m', UNIT_MS.m],
  ['s', UNIT_MS.s],
] as const;

/**
 * A duration in ms as a user would write it: the largest unit that divides it exactly (`30m`,
 * `90s`, `1500ms`). `parseDuration` reads every result back to the same number.
 */
export function formatDuration(ms: number): string {
  for (const [unit, size] of SHOWN_UNITS) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
