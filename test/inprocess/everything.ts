/**
 * The real server-everything, made in this process (the package's own factory, the one its stdio
 * entry point calls), for in-process tests that need a full upstream without spawning it.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';

interface Made {
  readonly server: McpServer;
  /** Stops the server's timers (simulated logging and updates, task expiry, the roots sync). */
  readonly cleanup: () => void;
}

// The package ships no type declarations: its factory is typed here, by what the tests use.
const factory = '@modelcontextprotocol/server-everything/dist/server/index.js';
const { createServer } = (await import(factory)) as { createServer: () => Made };

/** Each server made, so that `stopEverything` can stop their timers. */
const made: Made[] = [];

/** A new server-everything, for the harness's `upstreams`. */
export function everything(): McpServer {
  const one = createServer();
  made.push(one);
  return one.server;
}

/** Stops the timers of every server-everything made so far. */
export function stopEverything(): void {
  for (const one of made.splice(0)) one.cleanup();
}
