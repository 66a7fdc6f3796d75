import type { CommandWrapper } from '../transports/childProcess.js';
import type { ConnectionFactory } from './connection.js';
import { embeddedOr } from './connection.js';
import { Handshake } from './handshake.js';
import { HttpConnections } from './httpConnection.js';
import { ListSync } from './listSync.js';
import { StdioConnections } from './stdioConnection.js';
import { Upstream, type UpstreamOptions } from './upstream.js';

/** What an upstream's connections need besides its options. */
export interface ConnectionExtras {
  /** What runs a stdio server's command confined, when its entry asks for a sandbox. */
  readonly wrap?: CommandWrapper;
}

/** An upstream and its parts: the connection factory its transport calls for, handshake, list sync. */
export function createUpstream(options: UpstreamOptions, extras: ConnectionExtras = {}): Upstream {
  const { config, logger } = options;
  return new Upstream(options, {
    connections: connectionsFor(options, extras),
    handshake: new Handshake({ ...options, log: logger.child(config.name) }),
    lists: new ListSync({ server: config.name, log: logger.child(config.name) }),
  });
}

/** The connection factory of a server entry's transport, behind the embedder's own connections if any. */
function connectionsFor(options: UpstreamOptions, { wrap }: ConnectionExtras): ConnectionFactory {
  const { config, children, spawned, connect } = options;
  const own: ConnectionFactory =
    config.transport === 'stdio'
      ? new StdioConnections({ children, config, ...(spawned && { spawned }), ...(wrap && { wrap }) })
      : new HttpConnections();
  return connect === undefined ? own : embeddedOr(connect, own);
}
