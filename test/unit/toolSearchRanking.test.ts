import { describe, expect, it } from 'vitest';
import { rankTools } from '../../src/features/toolSearch/ranking.js';

const tools = [
  { name: 'github__create_issue', server: 'github', description: 'Open a new issue in a repository' },
  { name: 'github__list_pull_requests', server: 'github', description: 'List pull requests' },
  {
    name: 'fs__read_file',
    server: 'fs',
    description: 'Read the contents of a file',
    inputSchema: { type: 'object', properties: { path: { description: 'Path of the file' } } },
  },
  { name: 'fs__write_file', server: 'fs', description: 'Write text to a file' },
];

describe('rankTools', () => {
  it('puts the tool whose words match the question first', () => {
    const ranking = rankTools(tools);
    expect(ranking.search('open an issue', { limit: 3 })[0]?.name).toBe('github__create_issue');
    expect(ranking.search('read contents of a file', { limit: 3 })[0]?.name).toBe('fs__read_file');
  });

  it('keeps to the servers asked for and to the limit', () => {
    const ranking = rankTools(tools);
    const hits = ranking.search('file issue', { limit: 5, servers: ['fs'] });
    expect(hits.every((hit) => hit.server === 'fs')).toBe(true);
    expect(ranking.search('file', { limit: 1 })).toHaveLength(1);
  });
});
