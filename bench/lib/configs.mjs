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
