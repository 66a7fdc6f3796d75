import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import type { SyslogSinkConfig } from '../../../config/types.js';
import { payloadOf, syslogFrame, type ShippedRecord } from './format.js';
import type { SinkTransport } from './transport.js';

/** How long connecting may take before the attempt counts as failed (the spool keeps the records). */
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * RFC 5424 syslog over one TCP (or TLS) connection, RFC 6587 octet-counted frames. A batch counts
 * as taken when its bytes were handed to the kernel on a connection that was open: plain syslog
 * has no acknowledgement. A connection the receiver closed is noticed (its end of stream) and
 * replaced on the next batch, so what is sent while the receiver is down waits in the spool.
 */
export function createSyslogTransport(config: SyslogSinkConfig, product: { version: string }): SinkTransport {
  let socket: net.Socket | undefined;
  let connecting: Promise<net.Socket> | undefined;
  const ca = config.ca === undefined ? undefined : readFileSync(config.ca);

  function connect(): Promise<net.Socket> {
    connecting ??= new Promise<net.Socket>((resolve, reject) => {
      const options = { host: config.host, port: config.port };
      // SNI carries host names only (RFC 6066); an address is still checked against the certificate.
      const s = config.tls
        ? tls.connect({
            ...options,
            ...(net.isIP(config.host) === 0 && { servername: config.host }),
            ...(ca && { ca }),
          })
        : net.connect(options);
      const ready = config.tls ? 'secureConnect' : 'connect';
      const timer = setTimeout(
        () => s.destroy(new Error(`connecting took over ${CONNECT_TIMEOUT_MS} ms`)),
        CONNECT_TIMEOUT_MS,
      );
      s.once(ready, () => {
        clearTimeout(timer);
        s.setNoDelay(true);
        s.setKeepAlive(true, 30_000);
        resolve(s);
      });
      s.once('error', (error) => {
        clearTimeout(timer);
        reject(config.tls ? explainTls(error, config) : error);
      });
      // The receiver never writes to us; an end of stream means it closed or went away.
      s.on('data', () => {});
      s.on('end', () => s.destroy());
      s.on('close', () => {
        if (socket === s) socket = undefined;
      });
      s.on('error', () => {
        if (socket === s) socket = undefined;
      });
    }).then(
      (s) => {
        connecting = undefined;
        socket = s;
        return s;
      },
      (error: unknown) => {
        connecting = undefined;
        throw error;
      },
    );
    return connecting;
  }

  return {
    async send(records: readonly ShippedRecord[]): Promise<void> {
      const s = socket !== undefined && !socket.destroyed ? socket : await connect();
      const text = records
        .map((record) => syslogFrame(record, payloadOf(record, config.format, product), config))
        .join('');
      await new Promise<void>((resolve, reject) => {
        const onClose = () => reject(new Error('the syslog receiver closed the connection'));
        s.once('close', onClose);
        s.write(text, 'utf8', (error) => {
          s.off('close', onClose);
          if (error) reject(error);
          else if (s.destroyed) reject(new Error('the syslog receiver closed the connection'));
          else resolve();
        });
      });
    },
    close(): void {
      socket?.end();
      socket = undefined;
    },
  };
}

/** Errors of the TLS handshake that mean the receiver's certificate was not accepted. */
const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_NOT_YET_VALID',
  'CERT_HAS_EXPIRED',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * A refused certificate said as such, with what was trusted: "unable to get local issuer
 * certificate" alone does not tell a person that the gateway, not the receiver, said no.
 */
function explainTls(error: Error, config: SyslogSinkConfig): Error {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === undefined || !CERTIFICATE_CODES.has(code)) return error;
  const trusted = config.ca === undefined ? "the system's CAs" : `the CAs in ${config.ca}`;
  return Object.assign(
    new Error(
      `refused the TLS certificate of ${config.host}:${config.port} (${error.message}; trusting ${trusted})`,
    ),
    { code, cause: error },
  );
}
