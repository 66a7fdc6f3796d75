/**
 * The HTTP listener's own timers, served in-process with two listeners in one process: the one
 * that gives up a request body that stopped coming, and the one that writes keep-alive comments
 * on a quiet answer stream. Each listener owns its own, so closing one stops its timers and not
 * the other's. The clock the timers read is vitest's (intervals and Date only: sockets, child
 * processes and the gateway's timeouts stay real), so 15 s pass at once.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FAST_GATEWAY, fixture, tempDir, writeConfig } from '../integration/harness.js';
import { INITIALIZE, postRpc } from '../integration/httpHarness.js';
import { servedPerTest } from './perTest.js';

const each = servedPerTest();
afterEach(() => {
  vi.useRealTimers();
});

function setup() {
  const dir = tempDir();
  const record = path.join(dir, 'upstream.jsonl');
  const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture(['--record', record]) } }, dir);
  return { config, record };
}

/** A session of the listener at `url`, initialized by hand; its id. */
async function session(url: string): Promise<string> {
  const opened = await postRpc(url, INITIALIZE);
  expect(opened.status).toBe(200);
  const id = opened.headers.get('mcp-session-id')!;
  const initialized = await postRpc(
    url,
    { jsonrpc: '2.0', method: 'notifications/initialized' },
    { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
  );
  expect(initialized.status).toBe(202);
  return id;
}

/** A POST whose headers promise more body than is sent: it then sends nothing more. */
function pausedBody(url: string): { req: ClientRequest; closed: () => boolean } {
  let closed = false;
  const req = request(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'Content-Length': '200',
    },
  });
  // The listener destroys the socket: the request fails without an answer.
  req.on('error', () => (closed = true));
  req.on('response', () => (closed = true));
  req.write('{"jsonrpc":"2.0","id":7,');
  return { req, closed: () => closed };
}

/** A tool call that never ends, in session `id`, whose answer stream is read as it comes. */
function quietCall(url: string, id: string): { req: ClientRequest; text: () => string } {
  let text = '';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'up__hang', arguments: {} },
  });
  const req = request(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'mcp-session-id': id,
      'mcp-protocol-version': '2025-11-25',
    },
  });
  req.on('response', (res: IncomingMessage) => res.on('data', (chunk: Buffer) => (text += chunk)));
  req.on('error', () => {});
  req.end(body);
  return { req, text: () => text };
}

/** Whether the upstream was sent a call of tool `name` (it records each message it gets). */
function upstreamCalled(record: string, name: string): boolean {
  return (
    existsSync(record) &&
    readFileSync(record, 'utf8')
      .split('\n')
      .some((line) => line.includes('"tools/call"') && line.includes(`"${name}"`))
  );
}

describe('HTTP listener timers', () => {
  it('are each listener its own: closing one leaves the other giving up a paused body and keeping a quiet stream alive', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
    const one = setup();
    const two = setup();
    const first = await each.http(one.config);
    const second = await each.http(two.config);
    // The first listener is used (a session, a body being read when it closes), then closed.
    await session(first.url);
    const firstPaused = pausedBody(first.url);
    await first.stop();
    await first.exited;
    await expect.poll(() => firstPaused.closed()).toBe(true);

    const id = await session(second.url);
    const paused = pausedBody(second.url);
    const call = quietCall(second.url, id);
    await expect.poll(() => upstreamCalled(two.record, 'hang')).toBe(true);
    const started = Date.now();
    // Time goes on a second at a time until both fall due, the body paused 15 s and the stream
    // quiet 15 s (each up to a second late), or until 30 s have passed.
    const due = () => paused.closed() && call.text().includes(': keepalive');
    await expect
      .poll(
        async () => {
          if (!due()) await vi.advanceTimersByTimeAsync(1000);
          return due() || Date.now() - started >= 30_000;
        },
        { timeout: 15_000, interval: 20 },
      )
      .toBe(true);
    expect(paused.closed()).toBe(true);
    expect(call.text()).toContain(': keepalive');
    expect(Date.now() - started).toBeGreaterThanOrEqual(15_000);
    expect(second.stderr()).toMatch(/the request body paused for 15 s; the connection was closed/);
    // The call is cancelled, so the gateway stops without waiting for it.
    await postRpc(
      second.url,
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2 } },
      { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    );
    for (const req of [firstPaused.req, paused.req, call.req]) req.destroy();
  });
});
