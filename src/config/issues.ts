/**
 * Problems found in a config, policy or pins file, each placed by file, line, column and key.
 * The config layer's own error: everything above it (policies, pins, the CLI) reports with it.
 */

/** One problem (or, among a load's warnings, one thing ignored) in a config or policy file, located for a human. */
export interface ConfigIssue {
  readonly file: string;
  /** 1-based; 0 when the problem is not tied to a place (e.g. the file is missing). */
  readonly line: number;
  readonly column: number;
  /** Dotted key path, e.g. `servers.fs.command`; empty for the whole document. */
  readonly path: string;
  readonly message: string;
}

export function formatConfigIssue(issue: ConfigIssue): string {
  // A column of 0 means the line is known but not the column (e.g. a server's entry as a whole).
  const where =
    issue.line === 0
      ? issue.file
      : issue.column === 0
        ? `${issue.file}:${issue.line}`
        : `${issue.file}:${issue.line}:${issue.column}`;
  const key = issue.path === '' ? '' : ` ${issue.path}:`;
  return `${where}:${key} ${issue.message}`;
}

/** A config (or policy) file that cannot be used. Carries every problem found, not just the first. */
export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  readonly issues: readonly ConfigIssue[];

  constructor(issues: readonly ConfigIssue[]) {
    super(issues.map(formatConfigIssue).join('\n'));
    this.name = 'ConfigError';
    this.issues = issues;
  }
}
