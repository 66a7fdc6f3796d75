// Gateway settings the benchmarks share, so that each measures the same configurations.

/**
 * warden-bare's `gateway:` section: every repair off (the repair stage then has nothing to do),
 * no argument validation (the stage is then left out), and only errors logged.
 */
export const BARE_GATEWAY = Object.freeze({
  repair: {
    textForStructured: false,
    invalidStructured: 'off',
    structuredFromText: false,
    missingStructured: 'off',
  },
  validateArguments: false,
  log: { level: 'error' },
});

/** warden-bare's concurrency limit: above the benchmarks' 32 in flight, so nothing queues. */
export const BARE_LIMITS = Object.freeze({ maxConcurrency: 64, maxQueue: 1024 });

// Text of the one call the bench policy denies, sent once per round to prove it is enforced.
export const DENY_PROBE_TEXT = 'bench: deny me';

/**
 * warden-full's policy: a few rules of the usual kinds (globs on server and tool, a kind,
 * argument schemas, a paths condition). Every echo call is evaluated against all of them: the
 * first four do not match it, the fifth matches only the probe's text, the last allows. Every
 * rule can match something in the bench's config, so `mcp-warden check` passes it.
 */
export const BENCH_POLICY = Object.freeze({
  default: 'allow',
  rules: [
    { id: 'no-deletes', match: { tool: 'delete_*' }, action: 'deny', reason: 'Deleting is not allowed.' },
    {
      id: 'no-sampling',
      match: { server: 'bench', kind: 'sampling' },
      action: 'deny',
      reason: 'No sampling.',
    },
    {
      id: 'no-etc',
      match: { tool: 'write_*', arguments: { properties: { path: { pattern: '^/etc/' } } } },
      action: 'deny',
      reason: 'Writing to /etc is not allowed.',
    },
    {
      id: 'deny-probe',
      match: {
        server: 'bench',
        tool: 'echo',
        arguments: { properties: { text: { const: DENY_PROBE_TEXT } }, required: ['text'] },
      },
      action: 'deny',
      reason: 'The bench checks that policies are enforced.',
    },
    { id: 'bench', match: { server: 'bench', tool: '*' }, action: 'allow' },
  ],
});
