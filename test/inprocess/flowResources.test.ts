/**
 * Resource reads count for flow control, with the gateway served in-process: a `resources/read`
 * of a resource labelled `private` (by a policy labels entry, not its server) brings the label
 * into the session, so a later call that completes the trifecta is asked about.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, tempDir, textOf, writeConfig } from '../integration/harness.js';
import { call, confirmingHost } from '../integration/flowControlSetup.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();

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
    const host = await confirmingHost(each.connect, config);
    const { asked } = host;
    const callAs = (name: string) => call(host, name);

    await callAs('web__echo');
    // A tool of the same server is not private: nothing is asked yet.
    await callAs('files__echo');
    expect(textOf(await callAs('mail__echo'))).toBe('mail__echo');
    expect(asked).toEqual([]);

    const read = await host.client.readResource({ uri: 'fixture://files/a' });
    expect((read.contents[0] as { text: string }).text).toBe('a from files');
    const refused = await callAs('mail__echo');
    expect(refused.isError).toBe(true);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('private data from resource "fixture://files/a" on server "files"');
  });
});
