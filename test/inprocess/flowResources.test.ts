/**
 * Resource reads count for flow control, with the gateway served in-process: a `resources/read`
 * of a resource labelled `private` (by a policy labels entry, not its server) brings the label
 * into the session, so a later call that completes the trifecta is asked about.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  FAST_GATEWAY,
  fixture,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { connectServed } from './served.js';

const hosts: HostSession[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.close()));
});

describe('resource reads and the lethal trifecta', () => {
  it('reading a private resource after untrusted content makes an egress call ask; its tools stay unlabelled', async () => {
    const dir = tempDir('warden-flow-res-');
    writeFileSync(
      path.join(dir, 'policy.yaml'),
      'labels:\n  - id: private-notes\n    match: { kind: resource, resource: "fixture://files/*" }\n    add: [private]\n',
    );
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        policies: ['policy.yaml'],
        flow: { trifecta: 'confirm' },
        servers: {
          web: fixture(['--name', 'web'], { labels: ['untrusted'] }),
          files: fixture(['--name', 'files', '--resources']),
          mail: fixture(['--name', 'mail'], { labels: ['egress'] }),
        },
      },
      dir,
    );
    const asked: string[] = [];
    const host = await connectServed(config, {
      capabilities: { elicitation: { form: {} } },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, (request) => {
          asked.push((request.params as { message: string }).message);
          return { action: 'decline' } as never;
        }),
    });
    hosts.push(host);
    const call = async (name: string) =>
      (await host.client.callTool({ name, arguments: { text: name } })) as CallToolResult;

    await call('web__echo');
    // A tool of the same server is not private: nothing is asked yet.
    await call('files__echo');
    expect(textOf(await call('mail__echo'))).toBe('mail__echo');
    expect(asked).toEqual([]);

    const read = await host.client.readResource({ uri: 'fixture://files/a' });
    expect((read.contents[0] as { text: string }).text).toBe('a from files');
    const refused = await call('mail__echo');
    expect(refused.isError).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('private data from resource "fixture://files/a" on server "files"');
  });
});
