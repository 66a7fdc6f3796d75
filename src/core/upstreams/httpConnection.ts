import { UpstreamFailedError } from '../errors.js';
import { oversizeMessage, type HttpOversize } from '../transports/httpLimits.js';
import type { HttpTransport } from '../transports/httpTransport.js';
import {
  ConnectionBase,
  describeTarget,
  type ConnectionFactory,
  type ConnectOptions,
  type UpstreamConnection,
} from './connection.js';

/** Connections to a server over Streamable HTTP. */
export class HttpConnections implements ConnectionFactory {
  async connect(options: ConnectOptions): Promise<UpstreamConnection> {
    if (options.config.transport !== 'http') throw new Error(`${options.config.name} is not an HTTP server`);
    // Loaded only when an HTTP upstream exists: the SDK's HTTP client is a start-up cost stdio users need not pay.
    const { HttpTransport } = await import('../transports/httpTransport.js');
    return new HttpConnection(HttpTransport, options);
  }
}

class HttpConnection extends ConnectionBase implements UpstreamConnection {
  readonly child = undefined;
  readonly transport: HttpTransport;
  private readonly server: string;

  constructor(
    Transport: typeof HttpTransport,
    private readonly options: ConnectOptions,
  ) {
    const { config, gateway } = options;
    if (config.transport !== 'http') throw new Error(`${config.name} is not an HTTP server`);
    super(describeTarget(config));
    this.server = config.name;
    this.transport = new Transport({
      url: config.url,
      headers: config.headers,
      maxMessageBytes: gateway.maxMessageBytes,
      onOversize: (info) => this.oversize(info),
      paramHeaders: options.paramHeaders,
      ...(options.authorization && { authorization: options.authorization }),
    });
    this.transport.onclose = () =>
      this.end(new UpstreamFailedError(this.server, `connection closed ${this.phase} (${this.what})`));
    // Tokens that can no longer be renewed end the connection: every call on it would fail the
    // same way until someone signs in, and supervision knows to wait for that.
    this.transport.onsigninrequired = (error) => this.end(error);
  }

  async close(): Promise<void> {
    await this.transport.close().catch(() => {});
  }

  /**
   * An HTTP response body or SSE event over the size bound, cut off where it passed it. The
   * request it answered fails; a cut-off event on the standalone stream (no request) is logged,
   * and the SDK reconnects that stream.
   */
  private oversize(info: HttpOversize): void {
    const message = oversizeMessage(info, this.options.gateway.maxMessageBytes);
    this.options.log.warn(message);
    if (info.id !== undefined) this.peer?.failById(info.id, new UpstreamFailedError(this.server, message));
  }
}
