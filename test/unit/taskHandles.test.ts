import { describe, expect, it } from 'vitest';
import { MAX_SEALED_CHARS, TaskHandles } from '../../src/core/tasks/handles.js';
import { retagRelatedTask, RELATED_TASK } from '../../src/core/protocol/taskMessages.js';

describe('task handles', () => {
  const handles = new TaskHandles();
  const ref = { server: 'github', taskId: 'task-1', owner: 'session-a' };

  it('opens what it sealed, for its owner only', () => {
    const handle = handles.handle(ref);
    expect(handle).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(handle).not.toContain('task-1');
    expect(handles.openHandle(handle, 'session-a')).toEqual(ref);
    // Another principal presenting the same handle learns nothing: it does not exist for them.
    expect(handles.openHandle(handle, 'session-b')).toBeUndefined();
  });

  it('gives one task one handle, and colliding ids of two servers two', () => {
    expect(handles.handle(ref)).toBe(handles.handle({ ...ref }));
    expect(handles.handle(ref)).not.toBe(handles.handle({ ...ref, server: 'gitlab' }));
  });

  it('refuses every altered byte, another process key, and non-handles', () => {
    const handle = handles.handle(ref);
    const bytes = Buffer.from(handle, 'base64url');
    for (let i = 0; i < bytes.length; i++) {
      const altered = Buffer.from(bytes);
      altered[i]! ^= 0x01;
      expect(handles.openHandle(altered.toString('base64url'), 'session-a')).toBeUndefined();
    }
    expect(new TaskHandles().openHandle(handle, 'session-a')).toBeUndefined();
    for (const junk of ['', 'task-1', 'a'.repeat(MAX_SEALED_CHARS + 1), 42, null, 'not base64!'])
      expect(handles.openHandle(junk, 'session-a')).toBeUndefined();
  });

  it('never takes a list cursor for a handle, or a handle for a cursor', () => {
    const cursor = handles.cursor({ server: 'github', cursor: 'p2', skip: 3, owner: 'session-a' });
    expect(handles.openCursor(cursor, 'session-a')).toEqual({
      server: 'github',
      cursor: 'p2',
      skip: 3,
      owner: 'session-a',
    });
    expect(handles.openHandle(cursor, 'session-a')).toBeUndefined();
    expect(handles.openCursor(handles.handle(ref), 'session-a')).toBeUndefined();
    expect(handles.openCursor(cursor, 'session-b')).toBeUndefined();
  });
});

describe('related-task meta', () => {
  it('is re-tagged, and left out when it cannot be translated', () => {
    const meta = { [RELATED_TASK]: { taskId: 'x' }, other: 1 };
    expect(retagRelatedTask(meta, (id) => `h(${id})`)).toEqual({
      [RELATED_TASK]: { taskId: 'h(x)' },
      other: 1,
    });
    expect(retagRelatedTask(meta, () => undefined)).toEqual({ other: 1 });
    const plain = { other: 1 };
    expect(retagRelatedTask(plain, () => 'never')).toBe(plain);
  });
});
