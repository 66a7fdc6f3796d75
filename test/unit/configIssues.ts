import { ConfigError, formatConfigIssue } from '../../src/config/issues.js';

/**
 * The messages of the `ConfigError` that `run` throws, exactly as the CLI prints them, one per
 * issue. Fails when `run` does not throw one.
 */
export function thrownIssues(run: () => unknown): string[] {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatConfigIssue);
    throw error;
  }
  throw new Error('expected a ConfigError');
}

/** As `thrownIssues`, for a `run` whose promise rejects with the `ConfigError`. */
export async function rejectedIssues(run: () => Promise<unknown>): Promise<string[]> {
  try {
    await run();
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map(formatConfigIssue);
    throw error;
  }
  throw new Error('expected a ConfigError');
}
