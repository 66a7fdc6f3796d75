import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Integration tests spawn real processes; two cores, so keep parallelism modest.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll waits for what has no event to await (a file a process writes, a process
    // gone). Its 1 s default is too short on a shared two-core machine under load.
    expect: { poll: { timeout: 15_000 } },
    projects: [
      {
        extends: true,
        test: { name: 'all', include: ['test/**/*.test.ts'], exclude: ['test/inprocess/**'] },
      },
      {
        // The whole gateway over memory. Each file would otherwise load and transform every
        // module of the gateway again (measured: about half of these files' time under load);
        // they share one module graph instead. Safe because no module of ours keeps state one
        // gateway could see of another's (the HTTP listener's shared once-a-second sweeps visit
        // only the items each request added, each with its own callbacks), and each test
        // builds its own gateway.
        extends: true,
        test: { name: 'inprocess', include: ['test/inprocess/**/*.test.ts'], isolate: false },
      },
      {
        // The config, policy and tool-schema tests once more, with the validators `npm run
        // build` generated (src/config/documentValidators.ts, src/lib/schema/dialectChecks.ts) in
        // place of the ones compiled from source: every message those tests pin must come out the
        // same from the code the gateway ships.
        extends: true,
        test: {
          name: 'generated-validators',
          include: [
            'test/unit/config*.test.ts',
            'test/unit/policy-*.test.ts',
            'test/unit/repair*.test.ts',
            'test/unit/validate.test.ts',
            'test/unit/simpleSchema.test.ts',
            'test/unit/schemaWarmup.test.ts',
          ],
        },
        resolve: {
          alias: [
            {
              find: /^(?:\.\.?\/)+(?:config\/)?documentValidators\.js$/,
              replacement: fileURLToPath(new URL('./dist/config/documentValidators.js', import.meta.url)),
            },
            {
              find: /^(?:\.\.?\/)+(?:lib\/schema\/)?dialectChecks\.js$/,
              replacement: fileURLToPath(new URL('./dist/lib/schema/dialectChecks.js', import.meta.url)),
            },
          ],
        },
      },
    ],
  },
});
