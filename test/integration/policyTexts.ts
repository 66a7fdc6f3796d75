/** Policies the reload tests switch between, and how the log names a version of one. */
import { createHash } from 'node:crypto';

export const ALLOW_ALL = 'default: allow\n';

export const NO_ECHO = `default: allow
rules:
  - id: no-echo
    match: { tool: echo }
    action: deny
    reason: Echo is off for now.
`;

/** The first 12 hex digits of the text's SHA-256, as `in force: main.yaml sha256:…` shows them. */
export const version = (text: string) => createHash('sha256').update(text).digest('hex').slice(0, 12);
