/**
 * Traces and metrics of a gateway served in-process (`startServing`, the real fixture upstream):
 * the SDK Client as host, a fixture upstream that echoes the `_meta` it receives, and a local
 * OTLP/HTTP receiver standing in for a collector. What needs the gateway's own process (the exit
 * code of a refused protocol, the modules it loads) stays with the built binary in
 * test/integration/telemetry.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CallToolResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  attributesOf,
  startOtlpReceiver,
  type OtlpReceiver,
  type OtlpSpan,
} from '../fixtures/otlpReceiver.js';
import {
  FAST_GATEWAY,
  fixture,
  tempDir,
  textOf,
  writeConfig,
  type HostSession,
} from '../integration/harness.js';
import { connectHttpHost } from '../integration/httpHarness.js';
import { servedPerTest } from './perTest.js';

const POLICY = `
default: allow
rules:
  - id: no-add
    match: { tool: add }
    action: deny
  - id: ask-echo
    match: { tool: echo }
    action: confirm
`;

/** OTLP's span kinds. */
const SERVER = 2;
const CLIENT = 3;

const HOST_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const HOST_SPAN = '00f067aa0ba902b7';

let host: HostSession | undefined;
let receiver: OtlpReceiver | undefined;
const each = servedPerTest();

function setup(telemetry: object) {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'policy.yaml'), POLICY);
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['policy.yaml'],
      audit: { file: './audit.jsonl' },
      telemetry,
      servers: { up: fixture(['--tools', 'basic,meta']) },
    },
    dir,
  );
  const audit = () =>
    readFileSync(path.join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { config, audit };
}

function otelEnv(endpoint: string, protocol = 'http/json'): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
    OTEL_SERVICE_NAME: 'warden-under-test',
    OTEL_BSP_SCHEDULE_DELAY: '50',
  };
}

const byName = (spans: OtlpSpan[], name: string) => spans.filter((s) => s.name === name);

describe('traces of requests over the HTTP listener', () => {
  it('say network.transport tcp on the host side, and the audit names who sent them', async () => {
    receiver = each.track(await startOtlpReceiver());
    const { config, audit } = setup({ traces: true });
    const gateway = await each.http(config, { env: otelEnv(receiver.endpoint) });
    try {
      const http = await connectHttpHost(gateway.url);
      await http.client.callTool({ name: 'up__echo_meta', arguments: {} });
      await http.close();
      await receiver.until(
        () => byName(receiver!.spans(), 'tools/call echo_meta').length > 0,
        'the spans of the call',
      );
      const [server] = byName(receiver.spans(), 'tools/call up__echo_meta');
      const [client] = byName(receiver.spans(), 'tools/call echo_meta');
      expect(attributesOf(server!.attributes)).toMatchObject({
        'network.transport': 'tcp',
        'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      });
      // The upstream is a child process on stdio all the same.
      expect(attributesOf(client!.attributes)['network.transport']).toBe('pipe');
      const call = audit().find((r) => r.type === 'call' && r.tool === 'up__echo_meta');
      expect(call).toMatchObject({ principal: { source: 'anonymous' }, trace: server!.traceId });
    } finally {
      await gateway.stop();
    }
  });
});

describe('traces', () => {
  it('a tool call is a SERVER span continuing the host trace, and a CLIENT span the upstream continues', async () => {
    receiver = each.track(await startOtlpReceiver());
    const { config, audit } = setup({ traces: true });
    host = await each.connect(config, {
      env: otelEnv(receiver.endpoint),
      capabilities: { elicitation: {} },
      beforeConnect: (client) =>
        client.setRequestHandler(ElicitRequestSchema, () => ({ action: 'accept', content: {} }) as never),
    });
    const result = await host.client.request(
      {
        method: 'tools/call',
        params: {
          name: 'up__echo_meta',
          arguments: {},
          _meta: { traceparent: `00-${HOST_TRACE}-${HOST_SPAN}-01`, baggage: 'tenant=blue' },
        },
      },
      CallToolResultSchema,
    );
    const upstreamMeta = JSON.parse(textOf(result)) as Record<string, string>;
    await host.client.callTool({ name: 'up__fail', arguments: {} });
    await host.client.callTool({ name: 'up__add', arguments: { a: 1, b: 2 } });
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'hi' } });
    await receiver.until(
      () => byName(receiver!.spans(), 'tools/call up__echo').length > 0,
      'the span of the confirmed echo call',
    );
    const spans = receiver.spans();

    const [server] = byName(spans, 'tools/call up__echo_meta');
    const [client] = byName(spans, 'tools/call echo_meta');
    expect(server?.kind).toBe(SERVER);
    expect(client?.kind).toBe(CLIENT);
    // One trace, the host's: host span → our SERVER span → our CLIENT span → the upstream.
    expect(server!.traceId).toBe(HOST_TRACE);
    expect(server!.parentSpanId).toBe(HOST_SPAN);
    expect(client!.traceId).toBe(HOST_TRACE);
    expect(client!.parentSpanId).toBe(server!.spanId);
    expect(upstreamMeta.traceparent).toBe(`00-${HOST_TRACE}-${client!.spanId}-01`);
    expect(upstreamMeta.baggage).toBe('tenant=blue');
    expect(attributesOf(server!.attributes)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'up__echo_meta',
      'gen_ai.operation.name': 'execute_tool',
      'network.transport': 'pipe',
      'jsonrpc.request.id': expect.any(String),
      'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    });
    expect(attributesOf(client!.attributes)).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'echo_meta',
      'network.transport': 'pipe',
    });
    // Arguments and results stay off spans unless asked for.
    expect(attributesOf(server!.attributes)).not.toHaveProperty('gen_ai.tool.call.arguments');

    const [failed] = byName(spans, 'tools/call up__fail');
    expect(attributesOf(failed!.attributes)['error.type']).toBe('tool_error');
    expect(failed!.status?.code).toBe(2);

    // A denial is a decision event, and the call never gets a CLIENT span.
    const [denied] = byName(spans, 'tools/call up__add');
    const decision = denied!.events?.find((e) => e.name === 'mcp_warden.policy.decision');
    expect(attributesOf(decision?.attributes)).toEqual({
      'mcp_warden.decision.effect': 'deny',
      'mcp_warden.decision.rule': 'no-add',
    });
    expect(byName(spans, 'tools/call add')).toEqual([]);

    // A confirmation is a child span of the call's, ended when the human answered.
    const [asked] = byName(spans, 'tools/call up__echo');
    const [confirmation] = byName(spans, 'mcp_warden.confirmation');
    expect(confirmation!.parentSpanId).toBe(asked!.spanId);
    expect(attributesOf(confirmation!.attributes)).toMatchObject({
      'mcp_warden.confirmation.confirmed': true,
      'mcp_warden.confirmation.how': 'elicitation',
    });

    const resource = attributesOf(receiver.resourceAttributes());
    expect(resource['service.name']).toBe('warden-under-test');

    // The audit trail names the trace of each call.
    const calls = audit().filter((r) => r.type === 'call');
    expect(calls.find((c) => c.tool === 'up__echo_meta')?.trace).toBe(HOST_TRACE);
    expect(calls.find((c) => c.tool === 'up__fail')?.trace).toBe(failed!.traceId);
  });

  it('arguments and results go on spans when telemetry.content is on, redacted', async () => {
    receiver = each.track(await startOtlpReceiver());
    const { config } = setup({ traces: true, content: true });
    host = await each.connect(config, { env: otelEnv(receiver.endpoint) });
    await host.client.callTool({ name: 'up__echo_meta', arguments: { password: 'hunter2' } });
    await receiver.until(() => byName(receiver!.spans(), 'tools/call up__echo_meta').length > 0, 'the span');
    const attributes = attributesOf(byName(receiver.spans(), 'tools/call up__echo_meta')[0]!.attributes);
    expect(attributes['gen_ai.tool.call.arguments']).toContain('password');
    expect(attributes['gen_ai.tool.call.arguments']).not.toContain('hunter2');
    expect(attributes['gen_ai.tool.call.result']).toContain('traceparent');
  });

  it('a resource URI goes on its span as the audit record keeps it: a password in it redacted', async () => {
    receiver = each.track(await startOtlpReceiver());
    const dir = tempDir();
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl' },
        telemetry: { traces: true },
        servers: { up: fixture(['--resources']) },
      },
      dir,
    );
    host = await each.connect(config, { env: otelEnv(receiver.endpoint) });
    const uri = 'https://alice:hunter2-s3cret@files.example/report?api_key=sk-live-0123456789abcdef';
    await host.client.readResource({ uri }).catch(() => undefined);
    await receiver.until(() => byName(receiver!.spans(), 'resources/read').length >= 2, 'both spans');
    const record = readFileSync(path.join(dir, 'audit.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((r) => r.type === 'request' && r.method === 'resources/read');
    expect(record?.target).toBeTypeOf('string');
    expect(record?.target).toBe(
      'https://alice:[REDACTED:url_password]@files.example/report?api_key=[REDACTED:api_key]',
    );
    for (const span of byName(receiver.spans(), 'resources/read')) {
      const attributes = attributesOf(span.attributes);
      expect(attributes['mcp.resource.uri']).toBe(record?.target);
      expect(JSON.stringify(span)).not.toContain('hunter2');
      expect(JSON.stringify(span)).not.toContain('sk-live-0123456789abcdef');
    }
  });

  it('http/protobuf sends protobuf to the same endpoint', async () => {
    receiver = each.track(await startOtlpReceiver());
    const { config } = setup({ traces: true, metrics: true });
    host = await each.connect(config, { env: otelEnv(receiver.endpoint, 'http/protobuf') });
    await host.client.callTool({ name: 'up__echo', arguments: { text: 'x' } }).catch(() => undefined);
    await receiver.until(() => receiver!.received.some((r) => r.path === '/v1/traces'), 'a trace export');
    const traces = receiver.received.filter((r) => r.path === '/v1/traces');
    expect(traces[0]!.contentType).toBe('application/x-protobuf');
    expect(traces[0]!.body.length).toBeGreaterThan(0);
  });

  it('an unreachable collector: calls are served, and the log says why nothing arrives', async () => {
    // A port that was just free: nothing listens there.
    const gone = await startOtlpReceiver();
    const endpoint = gone.endpoint;
    await gone.close();
    const { config } = setup({ traces: true });
    host = await each.connect(config, { env: otelEnv(endpoint) });
    const result = await host.client.callTool({ name: 'up__echo_meta', arguments: {} });
    expect(textOf(result)).toContain('traceparent');
    // The exporter gives up on its first batch after about 9 s of retries: leave it room on a busy machine.
    await host.waitForStderr(/OpenTelemetry: .*(ECONNREFUSED|export)/i, 25_000);
  }, 45_000);
});

describe('metrics', () => {
  it('exports the MCP duration histograms and the gateway counters under their names', async () => {
    receiver = each.track(await startOtlpReceiver());
    const { config } = setup({ metrics: true, metricsInterval: '100ms' });
    host = await each.connect(config, { env: otelEnv(receiver.endpoint) });
    await host.client.callTool({ name: 'up__echo_meta', arguments: {} });
    await host.client.callTool({ name: 'up__add', arguments: { a: 1, b: 2 } });
    const wanted = [
      'mcp.server.operation.duration',
      'mcp.client.operation.duration',
      'mcp_warden.policy.decisions',
      'mcp_warden.queue.depth',
      'mcp_warden.audit.write.duration',
    ];
    await receiver.until(() => wanted.every((name) => receiver!.metricNames().has(name)), wanted.join(', '));
    // Metrics alone start no trace: the upstream gets the host's _meta as it was.
    expect(receiver.received.some((r) => r.path === '/v1/traces')).toBe(false);
  });
});
