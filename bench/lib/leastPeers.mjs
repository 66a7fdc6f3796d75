#!/usr/bin/env node
// The least peers that answer an MCP tool call, one per transport, so that bench/http.mjs can
// say what an HTTP round trip costs against a stdio one in Node before any gateway is involved.
// Each does the same work and nothing else: read one JSON-RPC request, JSON.parse it,
// JSON.stringify the echo tool's answer (the text it was given), write it. No validation, no
// session, no token, no MCP handshake (every request gets the echo answer).
//
//   node bench/lib/leastPeers.mjs --stdio   newline-delimited JSON-RPC on stdin/stdout
//   node bench/lib/leastPeers.mjs --http    node:http on 127.0.0.1, keep-alive, Nagle off; it
//                                           prints `listening on http://…/mcp` on stdout
//   node bench/lib/leastPeers.mjs --http-forward COMMAND [ARGS...]
//                                           the same node:http server, but each request goes to
//                                           the server COMMAND starts, over its stdio
//
// The HTTP peer answers each POST with one write (headers and body together, Content-Length
// set), which is the least node:http can do; what it costs over the stdio peer is the floor of
// any Node gateway's HTTP listener over loopback.
//
// The forwarding peer is the fair floor for a gateway, which does not answer a call itself but
// hands it to an upstream: per POST it parses the request, gives it an id of its own, writes it
// as one line to the upstream, parses the answer line, puts the host's id back, serialises it
// and writes it as the HTTP answer, as above. It does what bench/floor.mjs does for stdio, with
// an HTTP server in front instead of a pipe; notifications are forwarded and answered 202.

import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { lineSplitter } from './lines.mjs';

/** The echo tool's answer to `request`, serialised. */
function answer(request) {
  const text = request.params?.arguments?.text ?? '';
  return JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text }] } });
}

/** Sends `text` as the JSON answer of `res`, headers and body in one write. */
function sendJson(res, text) {
  res
    .writeHead(200, {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(text)),
    })
    .end(text);
}

/**
 * The least node:http server: each POST's body read whole and parsed; notifications handed to
 * `onNotification` (when given) and answered 202, requests handed to `onRequest(request, res)`.
 * Prints its URL once it listens.
 */
function serveHttp({ onRequest, onNotification }) {
  const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const request = JSON.parse(body);
      if (request.id === undefined) {
        onNotification?.(request);
        res.writeHead(202, { 'Content-Length': '0' }).end();
        return;
      }
      onRequest(request, res);
    });
  });
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`),
  );
}

/** Serves over HTTP by forwarding each request to the stdio server `command args` starts. */
function forwardOverHttp(command, args) {
  const upstream = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  upstream.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  /** Each request in flight by the id it was given upstream: its host id and its answer. */
  const waiting = new Map();
  let nextId = 1;
  upstream.stdout.setEncoding('utf8');
  upstream.stdout.on(
    'data',
    lineSplitter((line) => {
      if (line.length === 0) return;
      const message = JSON.parse(line);
      const call = waiting.get(message.id);
      if (call === undefined) return; // a notification of the server's: no host asked
      waiting.delete(message.id);
      message.id = call.hostId;
      sendJson(call.res, JSON.stringify(message));
    }),
  );
  serveHttp({
    onRequest(request, res) {
      const id = nextId++;
      waiting.set(id, { hostId: request.id, res });
      request.id = id;
      upstream.stdin.write(`${JSON.stringify(request)}\n`);
    },
    onNotification: (notification) => upstream.stdin.write(`${JSON.stringify(notification)}\n`),
  });
}

if (process.argv.includes('--stdio')) {
  process.stdin.setEncoding('utf8');
  process.stdin.on(
    'data',
    lineSplitter((line) => {
      if (line.length === 0) return;
      const request = JSON.parse(line);
      if (request.id === undefined) return; // a notification: nothing to answer
      process.stdout.write(answer(request) + '\n');
    }),
  );
  process.stdin.on('end', () => process.exit(0));
} else if (process.argv.includes('--http')) {
  serveHttp({ onRequest: (request, res) => sendJson(res, answer(request)) });
} else if (process.argv[2] === '--http-forward' && process.argv[3] !== undefined) {
  forwardOverHttp(process.argv[3], process.argv.slice(4));
} else {
  process.stderr.write(
    'usage: node bench/lib/leastPeers.mjs --stdio | --http | --http-forward COMMAND [ARGS...]\n',
  );
  process.exit(2);
}
