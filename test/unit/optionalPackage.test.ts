/** How a missing optional package is told apart from other failures, and what the user is told. */
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { importOptional, installCommand, MissingPackageError } from '../../src/lib/optionalPackage.js';

const need = { feature: 'telemetry', packages: ['@opentelemetry/api', '@opentelemetry/sdk-metrics'] };
const peers = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    peerDependencies: Record<string, string>;
  }
).peerDependencies;

async function failure(load: () => Promise<unknown>): Promise<unknown> {
  try {
    await importOptional(load, need);
  } catch (error) {
    return error;
  }
  throw new Error('expected the load to fail');
}

describe('importOptional', () => {
  it('names the package an ES import could not find, and the command that installs the set', async () => {
    const error = await failure(() => import('@opentelemetry/no-such-package-here' as string));
    expect(error).toBeInstanceOf(MissingPackageError);
    expect((error as MissingPackageError).packageName).toBe('@opentelemetry/no-such-package-here');
    expect((error as Error).message).toBe(
      'telemetry is configured, but the package @opentelemetry/no-such-package-here is not installed ' +
        '(it is optional: mcp-warden is installed without it). Install it beside mcp-warden, ' +
        'with --global if mcp-warden was installed with --global:\n' +
        `  npm install @opentelemetry/api@${peers['@opentelemetry/api']} @opentelemetry/sdk-metrics@${peers['@opentelemetry/sdk-metrics']}`,
    );
  });

  it('names the package of a CommonJS require of a path inside it', async () => {
    const error = await failure(async () => createRequire(import.meta.url)('no-such-package-here/lib/x.js'));
    expect((error as MissingPackageError).packageName).toBe('no-such-package-here');
  });

  it('passes on any other failure as it is: a missing file of ours is not a package to install', async () => {
    const own = await failure(() => import('./no-such-module-here.js' as string));
    expect(own).not.toBeInstanceOf(MissingPackageError);
    const thrown = new Error('boom');
    expect(await failure(() => Promise.reject(thrown))).toBe(thrown);
  });

  it('installs an unknown package at its latest version', () => {
    expect(installCommand(['left-pad'])).toBe('npm install left-pad');
  });
});
