/**
 * Flow control and result guardrails follow edits while the gateway serves (in-process, with
 * its config watchers): `flow.trifecta`, a server's labels and the `guardrails:` section in the config, and
 * the `labels:` and `guardrails:` entries of a policy file, each from the next call on. Each
 * test waits for the reload's own log line, never a fixed time.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AWS_KEY } from '../fixtures/secretSamples.js';
import { FAST_GATEWAY, tempDir, textOf, type HostSession } from '../integration/harness.js';
import { FIXTURE, NODE } from '../integration/harness.js';
import { call, confirmingHost } from '../integration/flowControlSetup.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

/** A YAML config of three fixture servers, `web`, `files` and `mail`, with `labels` by server. */
function configText(options: {
  readonly trifecta?: string;
  readonly labels: Record<string, string>;
  readonly extra?: string;
}): string {
  const server = (name: string) =>
    `  ${name}:\n    command: ${JSON.stringify(NODE)}\n    args: [${JSON.stringify(FIXTURE)}, --name, ${name}]\n` +
    (options.labels[name] === undefined ? '' : `    labels: [${options.labels[name]}]\n`);
  return [
    `gateway: ${JSON.stringify(FAST_GATEWAY)}`,
    ...(options.trifecta === undefined ? [] : [`flow: { trifecta: ${options.trifecta} }`]),
    options.extra ?? '',
    'servers:',
    server('web') + server('files') + server('mail'),
  ].join('\n');
}

async function serve(text: string, policy?: string) {
  const dir = tempDir('warden-flow-reload-');
  const file = path.join(dir, 'proxy.config.yaml');
  if (policy !== undefined) writeFileSync(path.join(dir, 'policy.yaml'), policy);
  writeFileSync(file, text);
  const host = await confirmingHost(each.connect, file);
  return { host, file, dir, asked: host.asked };
}

/** Waits for the gateway's `n`-th line saying `what` reloaded. */
async function reloaded(host: HostSession, what: RegExp, n: number): Promise<void> {
  await host.waitForStderr(new RegExp(`(${what.source}[^]*){${n}}`));
}
const CONFIG_RELOADED = /config file \S+ reloaded:/;
const POLICIES_RELOADED = /policies reloaded from /;

describe('edits of the config while serving', () => {
  it('flow.trifecta and server labels apply from the next call, and what the session saw is kept', async () => {
    const labels = { web: 'untrusted', files: 'private', mail: 'egress' };
    const { host, file, asked } = await serve(configText({ trifecta: 'audit', labels }));
    await call(host, 'web__echo');
    await call(host, 'files__echo');
    // audit: recorded only, the call runs.
    expect(textOf(await call(host, 'mail__echo', 'sent'))).toBe('sent');
    expect(asked).toEqual([]);

    writeFileSync(file, configText({ trifecta: 'deny', labels }));
    await reloaded(host, CONFIG_RELOADED, 1);
    expect(host.stderr()).not.toMatch(/restart needed for flow/);
    const denied = await call(host, 'mail__echo', 'sent');
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('Refused by flow.trifecta in proxy.config.yaml');

    // `mail` has no labels any more: its calls pass.
    writeFileSync(file, configText({ trifecta: 'deny', labels: { web: 'untrusted', files: 'private' } }));
    await reloaded(host, CONFIG_RELOADED, 2);
    expect(textOf(await call(host, 'mail__echo', 'kept'))).toBe('kept');
  });

  it('the guardrails section applies from the next call', async () => {
    const { host, file } = await serve(configText({ labels: {} }));
    expect(textOf(await call(host, 'web__echo', AWS_KEY))).toBe(AWS_KEY);
    writeFileSync(file, configText({ labels: {}, extra: 'guardrails: { secrets: block }' }));
    await reloaded(host, CONFIG_RELOADED, 1);
    const blocked = await call(host, 'web__echo', AWS_KEY);
    expect(blocked.isError).toBe(true);
    expect(textOf(blocked)).toContain('aws-access-key (content[0].text)');
  });
});

describe('edits of a policy file while serving', () => {
  it('its labels and guardrails entries apply from the next call', async () => {
    const { host, dir, asked } = await serve(
      configText({ trifecta: 'confirm', labels: {}, extra: 'policies: [policy.yaml]' }),
      'labels:\n  - match: { server: web }\n    add: [untrusted]\n',
    );
    await call(host, 'web__echo');
    await call(host, 'files__echo');
    expect(textOf(await call(host, 'mail__echo', 'free'))).toBe('free');
    expect(textOf(await call(host, 'web__echo', AWS_KEY))).toBe(AWS_KEY);

    writeFileSync(
      path.join(dir, 'policy.yaml'),
      [
        'labels:',
        '  - match: { server: web }',
        '    add: [untrusted]',
        '  - match: { server: files }',
        '    add: [private]',
        '  - match: { server: mail }',
        '    add: [egress]',
        'guardrails:',
        '  - match: { server: web }',
        '    secrets: redact',
        '',
      ].join('\n'),
    );
    await reloaded(host, POLICIES_RELOADED, 1);
    expect(textOf(await call(host, 'web__echo', AWS_KEY))).toBe('[redacted:aws-access-key]');
    // `files` is private from now on: read again, then `mail` would complete the trifecta.
    await call(host, 'files__echo');
    const refused = await call(host, 'mail__echo', 'exfiltrate');
    expect(refused.isError).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('lethal trifecta');
    expect(readFileSync(path.join(dir, 'policy.yaml'), 'utf8')).toContain('egress');
  });
});
