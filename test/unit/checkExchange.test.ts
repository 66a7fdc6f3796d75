import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { exchangesWithoutPrincipals } from '../../src/commands/check.js';
import { formatConfigIssue } from '../../src/config/issues.js';
import { parseConfigText } from '../../src/config/load.js';

const FILE = path.resolve('/srv/warden/team.yaml');

const warningsOf = (lines: readonly string[]) =>
  exchangesWithoutPrincipals(parseConfigText(lines.join('\n'), { file: FILE, env: {} }).config).map(
    formatConfigIssue,
  );

const SERVERS = [
  'servers:',
  '  plain: { url: "https://plain.example.com/mcp" }',
  '  up:',
  '    url: https://up.example.com/mcp',
  '    oauth: { tokenExchange: { clientId: warden } }',
  '  off:',
  '    url: https://off.example.com/mcp',
  '    disabled: true',
  '    oauth: { tokenExchange: { clientId: warden } }',
];

describe('check: token exchange with no principal token to exchange', () => {
  it('warns of each enabled server with tokenExchange in a config without auth:, naming file:line, server and fix', () => {
    const warnings = warningsOf(SERVERS);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${FILE}:3:`);
    expect(warnings[0]).toContain('servers.up.oauth.tokenExchange');
    expect(warnings[0]).toContain('server "up"');
    expect(warnings[0]).toContain('add an auth: section and serve over HTTP, or remove tokenExchange');
    // Listening without auth: still brings no principal's token.
    expect(warningsOf(['listen:', '  http: 127.0.0.1:8080', ...SERVERS])).toHaveLength(1);
  });

  it('is quiet when the config has auth:', () => {
    const auth = ['auth:', '  issuer: https://idp.example.com', '  audience: mcp-warden'];
    expect(warningsOf([...auth, ...SERVERS])).toEqual([]);
  });
});
