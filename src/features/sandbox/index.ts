/**
 * Sandboxed stdio servers: the wrapper each sandboxed server's command is started through. The
 * operating system's sandbox (runtime.ts) is loaded on the first start that needs it, so a
 * gateway whose servers ask for none never loads it.
 */
import type { ServerConfig, StdioServerConfig } from '../../config/types.js';
import type { ServerStartEvent, SandboxDeniedEvent } from '../../core/events.js';
import type { CommandWrapper } from '../../core/transports/childProcess.js';
import { sandboxGrants, type PolicyRules, type SandboxGrants } from './grants.js';
import type { SandboxRuntime } from './runtime.js';

export { describeGrants, sandboxGrants, type PolicyRules, type SandboxGrants } from './grants.js';

/** A record of the sandbox, without the session and principal the recorder adds. */
export type SandboxRecord =
  Omit<ServerStartEvent, 'session' | 'principal'> | Omit<SandboxDeniedEvent, 'session' | 'principal'>;

export interface SandboxesOptions {
  /** The policies in force, read by `sandbox: auto` (see grants.ts). */
  readonly policies?: () => PolicyRules | undefined;
  /** Where `server_start` and `sandbox_denied` records go, when there is an audit trail. */
  readonly record?: (event: SandboxRecord) => void;
  /** Told of each refusal too, for the log. */
  readonly warn?: (server: string, message: string) => void;
}

export interface Sandboxes {
  /** What starts `server` confined; undefined for a server that asks for no sandbox. */
  wrapFor(server: ServerConfig): CommandWrapper | undefined;
  /** Stops the filtering proxy, when a sandboxed server was ever started. */
  close(): Promise<void>;
}

/** The grants of a sandboxed stdio server; undefined for one without a sandbox. */
export function grantsOf(server: ServerConfig, policies?: PolicyRules): SandboxGrants | undefined {
  if (server.transport !== 'stdio' || server.sandbox === undefined) return undefined;
  return sandboxGrants(server, server.sandbox, policies === undefined ? {} : { policies });
}

export function createSandboxes(options: SandboxesOptions = {}): Sandboxes {
  let runtime: Promise<SandboxRuntime> | undefined;
  const open = (): Promise<SandboxRuntime> => {
    runtime ??= import('./runtime.js').then(({ openSandboxRuntime }) =>
      openSandboxRuntime({
        onDenied: (server, target, detail) => {
          options.warn?.(server, `sandbox refused ${target}: ${detail}`);
          options.record?.({ type: 'sandbox_denied', server, target, detail });
        },
      }),
    );
    // A machine that could not sandbox may be fixed (bubblewrap installed) before the next start.
    runtime.catch(() => (runtime = undefined));
    return runtime;
  };
  const wrapper =
    (server: StdioServerConfig): CommandWrapper =>
    async (command) => {
      const grants = grantsOf(server, options.policies?.())!;
      for (const refused of grants.refused ?? [])
        options.warn?.(server.name, `sandbox does not grant ${refused}`);
      const start = await (await open()).wrap(server.name, grants, command);
      options.record?.({
        type: 'server_start',
        server: server.name,
        sandbox: {
          read: [...grants.read],
          write: [...grants.write],
          network: grants.network === false ? false : [...grants.network.allow],
          temp: start.temp,
        },
      });
      return start;
    };
  return {
    wrapFor: (server) =>
      server.transport === 'stdio' && server.sandbox !== undefined ? wrapper(server) : undefined,
    async close() {
      const opened = runtime;
      runtime = undefined;
      await (await opened?.catch(() => undefined))?.close();
    },
  };
}
