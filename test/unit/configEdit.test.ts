import { describe, expect, it } from 'vitest';
import { editServers } from '../../src/commands/configEdit.js';

const FILE = '/srv/proxy.config.yaml';

describe('editServers (YAML)', () => {
  it('adds to the mcpServers section when that is the one the file has, in its indentation', () => {
    const text = 'mcpServers:\n    a:\n        command: x\n';
    const edit = editServers(text, FILE);
    edit.add('b', { command: 'y', args: ['--flag'] });
    expect(edit.text()).toBe(
      'mcpServers:\n    a:\n        command: x\n    b:\n        command: y\n        args: [--flag]\n',
    );
  });

  it('adds after a last entry that has no final newline', () => {
    const edit = editServers('servers:\n  a: { command: x }', FILE);
    edit.add('b', { url: 'https://b.example/mcp' });
    expect(edit.text()).toBe('servers:\n  a: { command: x }\n  b:\n    url: https://b.example/mcp\n');
  });

  it('disables and enables an entry written on one line, keeping its padding', () => {
    const edit = editServers('servers:\n  a: { command: x }\n  b: { command: y }\n', FILE);
    edit.setDisabled('a', true);
    expect(edit.text()).toBe('servers:\n  a: { command: x, disabled: true }\n  b: { command: y }\n');
  });

  it('removes the last entry of a section, and leaves the next section alone', () => {
    const edit = editServers(
      'servers:\n  a:\n    command: x\n  b:\n    command: y\n# after\naudit:\n  file: a.jsonl\n',
      FILE,
    );
    edit.remove('b');
    expect(edit.text()).toBe('servers:\n  a:\n    command: x\n# after\naudit:\n  file: a.jsonl\n');
  });

  it('renders a whole flow section again, as it cannot splice into it', () => {
    const edit = editServers('servers: { a: { command: x } }\n', FILE);
    edit.setDisabled('a', true);
    expect(edit.text()).toBe('servers: { a: { command: x, disabled: true } }\n');
  });
});
