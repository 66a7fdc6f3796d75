/**
 * Checks that what the gateway sends a host of the stateless revision (2026-07-28) is valid on
 * the wire: the official SDK v2 schemas (@modelcontextprotocol/core) for each result's shape,
 * plus the revision's own musts that those schemas leave optional (`resultType` on every result,
 * caching hints on cacheable ones, the server named in `_meta`).
 */
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  DiscoverResultSchema,
  ElicitRequestSchema,
  JSONRPCErrorResponseSchema,
  ListRootsRequestSchema,
  ListToolsResultSchema,
  ResultSchema,
  SubscriptionsAcknowledgedNotificationSchema,
  SubscriptionsListenResultSchema,
} from '@modelcontextprotocol/core';
import { expect } from 'vitest';

/** Any of the schemas, as far as these checks use them. */
interface Checker {
  safeParse(value: unknown): { success: true } | { success: false; error: { issues: unknown } };
}
import type { Json, RpcAnswer } from '../fixtures/modernHost.js';

const RESULTS = {
  'server/discover': DiscoverResultSchema,
  'tools/list': ListToolsResultSchema,
  'tools/call': CallToolResultSchema,
  'subscriptions/listen': SubscriptionsListenResultSchema,
} as const;
const CACHEABLE = new Set([
  'server/discover',
  'tools/list',
  'prompts/list',
  'resources/list',
  'resources/read',
]);
const INPUT_REQUESTS = {
  'elicitation/create': ElicitRequestSchema,
  'sampling/createMessage': CreateMessageRequestSchema,
  'roots/list': ListRootsRequestSchema,
} as const;

/** Asserts `answer` is a valid modern result of `method`, and returns the result. */
export function modernResult(method: keyof typeof RESULTS | string, answer: RpcAnswer): Json {
  expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
  const result = answer.result!;
  const schema: Checker = (RESULTS as unknown as Record<string, Checker>)[method] ?? ResultSchema;
  const parsed = schema.safeParse(result);
  expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true);
  expect(['complete', 'input_required']).toContain(result.resultType);
  expect((result._meta as Json)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'mcp-warden' });
  if (result.resultType === 'input_required') {
    expect(result.inputRequests !== undefined || result.requestState !== undefined).toBe(true);
    expectInputRequests(result.inputRequests);
    expect(result.ttlMs).toBeUndefined();
  } else if (CACHEABLE.has(method)) {
    expect(typeof result.ttlMs).toBe('number');
    expect(result.ttlMs as number).toBeGreaterThanOrEqual(0);
    expect(['public', 'private']).toContain(result.cacheScope);
  }
  return result;
}

/** Asserts each of `inputRequests` (an MRTR result's or a task's) is a valid request of its kind. */
function expectInputRequests(inputRequests: unknown): void {
  for (const request of Object.values((inputRequests ?? {}) as Record<string, Json>)) {
    const inputSchema = (INPUT_REQUESTS as unknown as Record<string, Checker>)[request.method as string];
    expect(inputSchema, `input request ${String(request.method)}`).toBeDefined();
    const check = inputSchema!.safeParse(request);
    expect(check.success, check.success ? '' : JSON.stringify(check.error.issues)).toBe(true);
  }
}

/** Asserts `answer` is a JSON-RPC error with `code`, and returns the error. */
export function modernError(answer: RpcAnswer, code: number): NonNullable<RpcAnswer['error']> {
  const parsed = JSONRPCErrorResponseSchema.safeParse({ jsonrpc: '2.0', ...answer });
  expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true);
  expect(answer.error?.code, JSON.stringify(answer)).toBe(code);
  return answer.error!;
}

/** Asserts a subscription acknowledgment is valid. */
export function modernAcknowledgment(notification: Json): void {
  const parsed = SubscriptionsAcknowledgedNotificationSchema.safeParse(notification);
  expect(parsed.success, parsed.success ? '' : JSON.stringify(parsed.error.issues)).toBe(true);
}

/**
 * The tasks extension (io.modelcontextprotocol/tasks) has no schema in the SDK: its Task, as
 * its specification writes it, checked field by field.
 */
function expectTask(task: Json): void {
  expect(typeof task.taskId).toBe('string');
  expect(['working', 'input_required', 'completed', 'cancelled', 'failed']).toContain(task.status);
  expect(typeof task.createdAt).toBe('string');
  expect(typeof task.lastUpdatedAt).toBe('string');
  expect(task.ttlMs === null || typeof task.ttlMs === 'number').toBe(true);
  if (task.pollIntervalMs !== undefined) expect(typeof task.pollIntervalMs).toBe('number');
  if (task.statusMessage !== undefined) expect(typeof task.statusMessage).toBe('string');
  // The older revision's spellings must not leak into this one.
  expect(task.ttl).toBeUndefined();
  expect(task.pollInterval).toBeUndefined();
}

/** Asserts `answer` is a valid CreateTaskResult of the tasks extension, and returns it. */
export function modernCreatedTask(answer: RpcAnswer): Json {
  expect(answer.error, JSON.stringify(answer.error)).toBeUndefined();
  const result = answer.result!;
  expect(ResultSchema.safeParse(result).success).toBe(true);
  expect(result.resultType).toBe('task');
  expectTask(result);
  expect((result._meta as Json)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'mcp-warden' });
  return result;
}

/** Asserts `answer` is a valid tasks/get result (a DetailedTask), and returns it. */
export function modernTaskState(answer: RpcAnswer): Json {
  const result = modernResult('tasks/get', answer);
  expect(result.resultType).toBe('complete');
  expectTask(result);
  if (result.status === 'completed') expect(typeof result.result).toBe('object');
  if (result.status === 'failed') expect(typeof (result.error as Json | undefined)?.code).toBe('number');
  if (result.status === 'input_required') {
    expect(typeof result.inputRequests).toBe('object');
    expectInputRequests(result.inputRequests);
  }
  return result;
}
