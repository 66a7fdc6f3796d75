import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it, vi } from 'vitest';
import { CATALOG_DEFAULTS } from '../../src/config/catalog.js';
import type { CatalogMode } from '../../src/config/types.js';
import type { NamedCatalog } from '../../src/core/catalog/namedCatalog.js';
import type { ToolViewContext } from '../../src/core/routing/toolView.js';
import { createToolSearch } from '../../src/features/toolSearch/feature.js';

/** A listing of `count` tools of server `bench`, as the catalogue serializes it. */
function listing(count: number): string {
  const tools = Array.from({ length: count }, (_, i) => ({
    name: `bench__tool_${i}`,
    description: `Tool number ${i}`,
    inputSchema: { type: 'object' },
  }));
  return JSON.stringify({ tools });
}

/**
 * One connection's view of a catalogue serving `json`. `resolve` is what the view calls for each
 * tool when it parses the listing, so its calls tell whether the listing was parsed.
 */
function view(mode: CatalogMode, json: string) {
  const resolve = vi.fn((name: string) => ({ server: 'bench', name }));
  const tools = { listResultJson: () => json, resolve } as unknown as NamedCatalog<Tool>;
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
  return { toolView, resolve };
}

describe('the catalogue view of a whole catalogue', () => {
  it('serves a listing configured as `all` as the catalogue wrote it, without parsing it', () => {
    const json = listing(500);
    const { toolView, resolve } = view('all', json);
    expect(toolView.listJson()).toBe(json);
    expect(toolView.instructions()).toEqual([]);
    expect(toolView.call('bench__tool_7', {})).toBeUndefined();
    // Parsing a large listing held a second copy of every tool for as long as it was served.
    expect(resolve).not.toHaveBeenCalled();
  });

  it('counts the tools of a short listing in `auto` mode, and lists them all below the bound', () => {
    const json = listing(10);
    const { toolView, resolve } = view('auto', json);
    expect(JSON.parse(toolView.listJson())).toEqual(JSON.parse(json));
    expect(resolve).toHaveBeenCalled();
  });

  it('serves a listing over the bound in `auto` mode as the search and call tools', () => {
    const { toolView } = view('auto', listing(100));
    const names = (JSON.parse(toolView.listJson()) as { tools: Tool[] }).tools.map((t) => t.name);
    expect(names).toHaveLength(2);
    expect(toolView.instructions()[0]).toContain('100 tools of server bench');
  });
});
