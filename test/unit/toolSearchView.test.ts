import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { CATALOG_DEFAULTS } from '../../src/config/catalog.js';
import type { CatalogMode } from '../../src/config/types.js';
import type { CatalogEntry, NamedCatalog } from '../../src/core/catalog/namedCatalog.js';
import type { ToolViewContext } from '../../src/core/routing/toolView.js';
import { createToolSearch } from '../../src/features/toolSearch/feature.js';

/**
 * The catalogue's listed entries for `count` tools of server `bench` (namespaced `bench__`), and
 * the listing's text as the catalogue serializes them.
 */
function listing(count: number): { entries: CatalogEntry<Tool>[]; json: string } {
  const entries = Array.from({ length: count }, (_, i) => ({
    exposed: `bench__tool_${i}`,
    server: 'bench',
    item: {
      name: `tool_${i}`,
      description: `Tool number ${i}`,
      inputSchema: { type: 'object' as const, properties: { limit: { type: 'number' } } },
    },
  }));
  const json = JSON.stringify({ tools: entries.map((e) => ({ ...e.item, name: e.exposed })) });
  return { entries, json };
}

/**
 * One connection's view of a catalogue listing `entries`. Its listed entries are what the view
 * reads when it makes the listed tools, so calls of `listedEntries` tell whether it did.
 */
function view(mode: CatalogMode, { entries, json }: ReturnType<typeof listing>) {
  const listedEntries = vi.fn(() => entries);
  const tools = {
    listResultJson: () => json,
    listedEntries,
    resolve: (name: string) => entries.find((e) => e.exposed === name),
  } as unknown as NamedCatalog<Tool>;
  const context = {
    tools,
    host: () => ({ info: { name: 'some-host', version: '1' } }),
    principal: { subject: 'local' },
    stateless: false,
    toolsChanged: () => {},
  } as unknown as ToolViewContext;
  const feature = createToolSearch({ catalog: { ...CATALOG_DEFAULTS, mode } });
  const toolView = feature.toolView?.(context);
  if (toolView === undefined) throw new Error('the catalogue feature made no view');
  return { toolView, listedEntries };
}

describe('the catalogue view of a whole catalogue', () => {
  it('serves a listing configured as `all` as the catalogue wrote it, without reading its tools', () => {
    const whole = listing(500);
    const { toolView, listedEntries } = view('all', whole);
    expect(toolView.listJson()).toBe(whole.json);
    expect(toolView.instructions()).toEqual([]);
    expect(toolView.call('bench__tool_7', {})).toBeUndefined();
    // Reading them held a second copy of every tool for as long as the listing was served.
    expect(listedEntries).not.toHaveBeenCalled();
  });

  it('counts the tools of a short listing in `auto` mode, and lists them all below the bound', () => {
    const short = listing(10);
    const { toolView, listedEntries } = view('auto', short);
    expect(JSON.parse(toolView.listJson())).toEqual(JSON.parse(short.json));
    expect(listedEntries).toHaveBeenCalled();
  });

  it('serves a listing over the bound in `auto` mode as the search and call tools', () => {
    const { toolView } = view('auto', listing(100));
    const names = (JSON.parse(toolView.listJson()) as { tools: Tool[] }).tools.map((t) => t.name);
    expect(names).toHaveLength(2);
    expect(toolView.instructions()[0]).toContain('100 tools of server bench');
  });

  it('finds tools by their listed names, with the definitions the listing holds', () => {
    const large = listing(100);
    const { toolView } = view('search', large);
    const found = toolView.call('search_tools', { query: 'tool number 42', limit: 100 });
    const text = (found as { answer: { content: { text: string }[] } }).answer.content[0]?.text ?? '';
    const tools = (JSON.parse(text) as { tools: Record<string, unknown>[] }).tools;
    const listed = (JSON.parse(large.json) as { tools: Record<string, unknown>[] }).tools;
    const hit = tools.find((t) => t['name'] === 'bench__tool_42');
    expect(hit).toEqual({ ...listed[42], server: 'bench' });
    expect(toolView.call('call_tool', { name: 'bench__tool_42', arguments: {} })).toEqual({
      route: 'bench__tool_42',
      arguments: {},
    });
    expect(toolView.call('call_tool', { name: 'tool_42' })).toHaveProperty('refuse');
  });
});
