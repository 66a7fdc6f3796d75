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
//
// The HTTP peer answers each POST with one write (headers and body together, Content-Length
// set), which is the least node:http can do; what it costs over the stdio peer is the floor of
// any Node gateway's HTTP listener over loopback.

import { createServer } from 'node:http';
import { lineSplitter } from './lines.mjs';

/** The echo tool's answer to `request`, serialised. */
function answer(request) {
  const text = request.params?.arguments?.text ?? '';
  return JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { content: [{ type: 'text', text }] } });
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
  const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const request = JSON.parse(body);
      if (request.id === undefined) {
        res.writeHead(202, { 'Content-Length': '0' }).end();
        return;
      }
      const text = answer(request);
      res
        .writeHead(200, {
          'Content-Type': 'application/json',
          'Content-Length': String(Buffer.byteLength(text)),
        })
        .end(text);
    });
  });
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`),
  );
} else {
  process.stderr.write('usage: node bench/lib/leastPeers.mjs --stdio | --http\n');
  process.exit(2);
}
