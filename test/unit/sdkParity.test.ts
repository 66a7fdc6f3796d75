/**
 * Facts we keep as data instead of importing the SDK at runtime (start-up cost, issue 7) must
 * stay equal to the installed SDK's. Upgrading the SDK makes these fail until the copies follow.
 */
import { describe, expect, it } from 'vitest';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import * as sdk from '@modelcontextprotocol/sdk/types.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS } from '../../src/core/protocol/versions.js';
import { childEnvironment } from '../../src/core/upstreams/childEnvironment.js';

describe('parity with the SDK', () => {
  it('lists the same protocol versions', () => {
    expect(SUPPORTED_PROTOCOL_VERSIONS).toEqual(sdk.SUPPORTED_PROTOCOL_VERSIONS);
    expect(LATEST_PROTOCOL_VERSION).toBe(sdk.LATEST_PROTOCOL_VERSION);
  });

  it('gives children the same default environment the SDK would', () => {
    expect(childEnvironment({})).toEqual(getDefaultEnvironment());
  });

  it('adds the configured variables and never passes shell functions', () => {
    const env = childEnvironment({ EXTRA: '1' }, { PATH: '/bin', HOME: '() { evil; }', SECRET: 'x' });
    expect(env).toEqual({ PATH: '/bin', EXTRA: '1' });
  });
});
