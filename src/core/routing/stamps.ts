import type { HostDialect } from '../host/hostDialect.js';
import type { RoutedMessage } from '../pipeline/types.js';
import type { Principal } from '../principal.js';
import type { PoolView } from '../upstreams/upstreamPool.js';

/** The members every message of one host connection is stamped with, for one server. */
export type Stamp = Pick<RoutedMessage, 'hostEra' | 'upstreamEra' | 'answerAs' | 'host' | 'principal'>;

/**
 * Stamps the messages of one host connection: the eras on both sides, how the upstream's answer
 * is put for this host, the host session and the principal. Read when each message is made, so
 * a host whose era the edge decided since, or an upstream that reconnected, is stamped as it is.
 */
export class MessageStamps {
  constructor(
    private readonly options: {
      /** The host's dialect, as the edge classified it (HostDialects.current). */
      readonly dialect: () => HostDialect;
      readonly pool: PoolView;
      readonly principal: Principal | undefined;
    },
  ) {}

  /** For a request to `server` (whose answer comes back shaped for this host). */
  stamp(server: string): Stamp {
    const dialect = this.options.dialect();
    const upstreamEra = this.options.pool.byName.get(server)?.era;
    return {
      hostEra: dialect.hostEra,
      upstreamEra,
      answerAs: dialect.answersFrom(upstreamEra),
      host: dialect.session,
      principal: this.options.principal,
    };
  }

  /** For a message `server` sends the host, or one answered before it reaches any server. */
  unanswered(server: string): Omit<Stamp, 'answerAs'> {
    const dialect = this.options.dialect();
    return {
      hostEra: dialect.hostEra,
      upstreamEra: this.options.pool.byName.get(server)?.era,
      host: dialect.session,
      principal: this.options.principal,
    };
  }
}
