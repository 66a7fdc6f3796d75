/**
 * The diagnostic log gets the audit's redaction: secrets in a logged line are hidden, and the
 * ordinary sentences the gateway writes about its settings are left as they are.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/core/logger.js';
import { createRedactor } from '../../src/features/audit/redact.js';

const redactor = createRedactor();

/** What the log shows for `message` logged at info. */
function logged(message: string): string {
  const lines: string[] = [];
  const logger = createLogger(
    { level: 'info' },
    {
      redact: { text: (t) => redactor.redactText(t), value: (v) => redactor.redactValue(v) },
      write: (line) => lines.push(line),
    },
  );
  logger.info(message);
  return lines
    .join('')
    .replace(/^\S+ mcp-warden info: /, '')
    .trimEnd();
}

describe('log redaction', () => {
  it.each([
    'server "github" needs an auth: section with a token or oauth settings',
    'the upstream wants a token: oauth sign-in is not configured',
    'a session: started for ada',
    'host sign-in failed: the identity provider refused the sign-in: access_denied',
  ])('leaves an ordinary sentence alone: %j', (message) => {
    expect(logged(message)).toBe(message);
  });

  const secret = 'Zq7wX9vK2mP4sR8tY1uV';
  it.each([
    [`Authorization: Bearer ${secret}`, 'Authorization: Bearer [REDACTED:bearer]'],
    [`request had Authorization: Bearer ${secret}`, 'request had Authorization: Bearer [REDACTED:bearer]'],
    [`sent Authorization: Basic dXNlcjpwYXNzd29yZA`, 'sent Authorization: Basic [REDACTED]'],
    [`Authorization: ${secret}`, 'Authorization: [REDACTED]'],
    [`upstream said client_secret=${secret}`, 'upstream said client_secret=[REDACTED]'],
    [`the client_secret: swordfish was refused`, 'the client_secret: [REDACTED] was refused'],
    [`grant_type=refresh_token&refresh_token=${secret}`, 'grant_type=refresh_token&refresh_token=[REDACTED]'],
    [`the host sent refresh_token: ${secret}`, 'the host sent refresh_token: [REDACTED]'],
    [`with the token: ${secret}`, 'with the token: [REDACTED]'],
    [`auth: swordfish`, 'auth: [REDACTED]'],
    [`password: "swordfish"`, 'password: "[REDACTED]"'],
    [`the password: swordfish was refused`, 'the password: [REDACTED] was refused'],
    [`login with passphrase: correcthorse`, 'login with passphrase: [REDACTED]'],
    [`the secret: swordfish`, 'the secret: [REDACTED]'],
  ])('hides a secret: %j', (message, shown) => {
    expect(logged(message)).toBe(shown);
  });
});
