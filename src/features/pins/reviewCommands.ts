/**
 * The commands that review and accept a tool's definition, as the messages about a blocked or
 * changed tool spell them out: exact, for this config file, ready to paste into a shell.
 */

/** `server/tool`, the selector the `pins` subcommands take. */
export function toolSelector(server: string, tool: string): string {
  return `${server}/${tool}`;
}

/** `mcp-warden pins <verb> --config FILE server/tool`, each part quoted for a POSIX shell when needed. */
export function pinsCommand(
  verb: 'diff' | 'accept',
  configFile: string,
  server: string,
  tool: string,
): string {
  return ['mcp-warden', 'pins', verb, '--config', configFile, toolSelector(server, tool)]
    .map(shellQuote)
    .join(' ');
}

/** `text` as one shell word: as is when it holds only safe characters, else in single quotes. */
export function shellQuote(text: string): string {
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(text)) return text;
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
