/**
 * Colour for people at a terminal, and none for pipes, files and logs. The conventions users
 * set to override that: `NO_COLOR` (any non-empty value) turns it off, `FORCE_COLOR` turns it on
 * even when the output is not a terminal (`FORCE_COLOR=0` or `false` turns it off). When both are
 * set, `FORCE_COLOR` wins, as in Node's own colour detection.
 */

/** Wraps text in one colour; the identity when colour is off. */
export type Paint = (text: string) => string;

export interface Palette {
  /** Whether these functions add escape codes. */
  readonly enabled: boolean;
  /** Errors, and lines a diff removes. */
  readonly red: Paint;
  /** Success, and lines a diff adds. */
  readonly green: Paint;
  /** Warnings. */
  readonly yellow: Paint;
  readonly bold: Paint;
  readonly dim: Paint;
}

/** Whether output to `stream` should be coloured, given the environment's overrides. */
export function colourEnabled(
  stream: { readonly isTTY?: boolean },
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  const force = env['FORCE_COLOR'];
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (env['NO_COLOR'] !== undefined && env['NO_COLOR'] !== '') return false;
  return stream.isTTY === true && env['TERM'] !== 'dumb';
}

/** SGR codes: each colour is switched on, then off with its own reset so nesting stays intact. */
const sgr =
  (on: number, off: number): Paint =>
  (text) =>
    text === '' ? text : `\u001b[${on}m${text}\u001b[${off}m`;

const plain: Paint = (text) => text;

/** The palette for one output stream. */
export function paletteFor(
  stream: { readonly isTTY?: boolean },
  env: Readonly<Record<string, string | undefined>>,
): Palette {
  if (!colourEnabled(stream, env))
    return { enabled: false, red: plain, green: plain, yellow: plain, bold: plain, dim: plain };
  return {
    enabled: true,
    red: sgr(31, 39),
    green: sgr(32, 39),
    yellow: sgr(33, 39),
    bold: sgr(1, 22),
    dim: sgr(2, 22),
  };
}
