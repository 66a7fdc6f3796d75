import { describe, expect, it } from 'vitest';
import {
  DeniedError,
  InvalidParamsError,
  MethodNotFoundError,
  NotServingError,
  PeerRpcError,
  ResourceNotFoundError,
  UnknownToolError,
  UpstreamFailedError,
  UpstreamRpcError,
  UpstreamUnavailableError,
  WardenError,
} from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import { DENIED_CODE, errorToWire, requestErrorToWire } from '../../src/core/rpc/errorsToWire.js';

function recordingLogger() {
  const lines: string[] = [];
  const logger: Logger = {
    error: (m) => lines.push(m),
    warn: (m) => lines.push(m),
    info: () => {},
    debug: () => {},
    child: () => logger,
  };
  return { logger, lines };
}

describe('errorToWire', () => {
  it('maps an unknown tool to JSON-RPC -32602 naming the tool', () => {
    expect(errorToWire(new UnknownToolError('x__y'), recordingLogger().logger)).toEqual({
      kind: 'error',
      error: { code: -32602, message: 'Unknown tool: x__y' },
    });
  });

  it('passes the upstream’s own JSON-RPC error through unchanged', () => {
    expect(
      errorToWire(new UpstreamRpcError('up', -32000, 'upstream says no', { a: 1 }), recordingLogger().logger),
    ).toEqual({
      kind: 'error',
      error: { code: -32000, message: 'upstream says no', data: { a: 1 } },
    });
  });

  it.each([
    [
      new UpstreamFailedError('up', 'process exited with code 5'),
      'UPSTREAM_FAILED',
      'Upstream server "up" failed: process exited with code 5',
    ],
    [
      new UpstreamUnavailableError('up', 'it is disabled in the config'),
      'UPSTREAM_UNAVAILABLE',
      'Upstream server "up" is not available: it is disabled in the config',
    ],
  ])('turns %s into an isError result the model can read, marked as ours', (error, code, text) => {
    expect(errorToWire(error, recordingLogger().logger)).toEqual({
      kind: 'result',
      result: {
        content: [{ type: 'text', text: `[mcp-warden] ${text}` }],
        isError: true,
        _meta: { 'mcp-warden/error': code },
      },
    });
  });

  it('hides unexpected errors from the host and logs the details', () => {
    const { logger, lines } = recordingLogger();
    const outcome = errorToWire(new TypeError('secret internals'), logger);
    expect(outcome).toEqual({
      kind: 'error',
      error: { code: -32603, message: 'mcp-warden internal error (see its log)' },
    });
    expect(lines.join('\n')).toContain('secret internals');
    const notExposed = errorToWire(new WardenError('UPSTREAM_FAILED', 'x', { expose: false }), logger);
    expect(notExposed.kind).toBe('error');
  });
});

describe('the errors the router throws', () => {
  it.each([
    [new InvalidParamsError('prompts/get needs params.name (a string)'), -32602, undefined],
    [new MethodNotFoundError('Method not found: x/y'), -32601, undefined],
    [new ResourceNotFoundError('mem://gone'), -32002, { uri: 'mem://gone' }],
    [new NotServingError('mcp-warden is shutting down'), -32603, undefined],
  ])('map %s to its JSON-RPC code, for tool calls and other requests alike', (error, code, data) => {
    const expected = { code, message: error.message, ...(data && { data }) };
    expect(errorToWire(error, recordingLogger().logger)).toEqual({ kind: 'error', error: expected });
    expect(requestErrorToWire(error, recordingLogger().logger)).toEqual(expected);
  });

  it('answers a denial with its own code and rule, so it does not read as a gateway fault', () => {
    const denied = new DeniedError(
      '[reason] (policy rule "no-etc", p.yaml) Resource "x" was not read.',
      'no-etc',
    );
    expect(requestErrorToWire(denied, recordingLogger().logger)).toEqual({
      code: DENIED_CODE,
      message: `[mcp-warden] ${denied.message}`,
      data: { 'mcp-warden/error': 'DENIED', rule: 'no-etc' },
    });
    expect(DENIED_CODE).not.toBe(-32603);
    const byDefault = new DeniedError('denied by the policy default', null);
    expect(requestErrorToWire(byDefault, recordingLogger().logger)).toMatchObject({
      code: DENIED_CODE,
      data: { 'mcp-warden/error': 'DENIED' },
    });
    // A tool call's denial stays an isError result the model reads.
    expect(errorToWire(denied, recordingLogger().logger)).toMatchObject({ kind: 'result' });
  });

  it("passes the host's own error to a question through, code, message and data", () => {
    expect(
      requestErrorToWire(new PeerRpcError(-1, 'user closed the dialog', { x: 1 }), recordingLogger().logger),
    ).toEqual({
      code: -1,
      message: 'user closed the dialog',
      data: { x: 1 },
    });
  });
});
