/**
 * Pinning tool definitions, served in-process (test/inprocess/served.ts, the same `startServing`
 * as `mcp-warden --config FILE`), the SDK Client as host: a fixture server whose tool description
 * changes between runs and while running; acceptances made with the built `mcp-warden pins`
 * while the gateway runs. What the `pins` and `tools` commands print, and the gateway refusing
 * an invalid pins file, stay with the built binary in test/integration/pins.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { runCli, textOf } from '../integration/harness.js';
import { names, nextListChanged, PULLED, setup } from '../integration/pinsSetup.js';
import { servedPerTest } from './perTest.js';

const served = servedPerTest();

describe('pins, onChange: block', () => {
  it('an acceptance while the gateway runs relists the tool and tells the host', async () => {
    const { config, describe: redescribe } = setup();
    expect((await runCli(['pins', 'accept', '--all', '--config', config])).code).toBe(0); // pins everything
    redescribe(PULLED);
    const host = await served.connect(config);
    expect(await names(host)).not.toContain('fx__echo');

    const changed = nextListChanged(host);
    const accepted = await runCli(['pins', 'accept', '--config', config, 'fx/echo']);
    expect(accepted.code).toBe(0);
    await changed;
    expect(await names(host)).toContain('fx__echo');
    expect(textOf(await host.client.callTool({ name: 'fx__echo', arguments: { text: 'back' } }))).toBe(
      'back',
    );
    await host.waitForStderr('tool "echo" of server "fx" matches its pin as accepted');
  });

  it('a change announced while running (list_changed) is flagged at once', async () => {
    const { config, describe: redescribe, audit } = setup();
    const host = await served.connect(config);
    expect(await names(host)).toContain('fx__echo');

    redescribe(PULLED);
    const changed = nextListChanged(host);
    await host.client.callTool({ name: 'fx__relist', arguments: {} });
    await changed;
    expect(await names(host)).not.toContain('fx__echo');
    const refused = await host.client.callTool({ name: 'fx__echo', arguments: { text: 'hi' } });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('its definition changed since it was pinned on');
    await host.close();
    expect(audit()).toContainEqual(
      expect.objectContaining({ type: 'tool_changed', upstreamTool: 'echo', action: 'block' }),
    );
  });
});

describe('pins, other settings', () => {
  it('onChange: warn keeps a changed tool listed and callable, with a warning in the log', async () => {
    const { config, describe: redescribe, audit } = setup({ onChange: 'warn' });
    expect((await runCli(['pins', 'accept', '--all', '--config', config])).code).toBe(0);
    redescribe(PULLED);
    const host = await served.connect(config);
    expect(await names(host)).toContain('fx__echo');
    expect(textOf(await host.client.callTool({ name: 'fx__echo', arguments: { text: 'hi' } }))).toBe('hi');
    await host.waitForStderr(
      /tool "echo" of server "fx" changed since it was pinned on \S+: description; still served \(pins.onChange: warn\)/,
    );
    await host.close();
    expect(audit()).toContainEqual(
      expect.objectContaining({ type: 'tool_changed', upstreamTool: 'echo', action: 'warn' }),
    );
  });

  it('onNew: block serves no tool until it is accepted, and pins nothing itself', async () => {
    const { config, pinsFile } = setup({ onNew: 'block' });
    const host = await served.connect(config);
    expect(await names(host)).toEqual([]);
    const refused = await host.client.callTool({ name: 'fx__add', arguments: { a: 1, b: 2 } });
    expect(textOf(refused)).toContain('it is new and has no pin yet, and pins.onNew is "block"');
    expect(existsSync(pinsFile)).toBe(false);
    const changed = nextListChanged(host);
    expect((await runCli(['pins', 'accept', '--config', config, 'fx/add'])).code).toBe(0);
    await changed;
    expect(await names(host)).toEqual(['fx__add']);
  });
});
