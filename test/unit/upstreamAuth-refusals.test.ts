/**
 * The OAuth client refuses an authorization server that misbehaves, with a message saying what
 * it did: an answer whose `state` is not this sign-in's, an answer from another issuer (RFC
 * 9207 mix-up), metadata that names another issuer (RFC 8414 §3.3), and a token endpoint that
 * redirects elsewhere (which would hand the code and verifier to that host). The authorization
 * server here is a real HTTP server that behaves well except in the one way each case names.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HttpServerConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/core/logger.js';
import { ServerOAuth } from '../../src/features/upstreamAuth/index.js';
import type { SecretStore } from '../../src/features/upstreamAuth/records.js';

type Misbehaviour = 'none' | 'state' | 'iss' | 'issuer' | 'redirect';

let server: Server;
let origin: string;
let misbehaviour: Misbehaviour = 'none';

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    switch (url.pathname) {
      case '/mcp':
        res
          .writeHead(401, {
            'www-authenticate': `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`,
          })
          .end();
        return;
      case '/.well-known/oauth-protected-resource/mcp':
        return json(200, { resource: `${origin}/mcp`, authorization_servers: [`${origin}/as`] });
      case '/.well-known/oauth-authorization-server/as':
        return json(200, {
          issuer: misbehaviour === 'issuer' ? 'https://elsewhere.example' : `${origin}/as`,
          authorization_endpoint: `${origin}/as/authorize`,
          token_endpoint: `${origin}/as/token`,
          registration_endpoint: `${origin}/as/register`,
          response_types_supported: ['code'],
          code_challenge_methods_supported: ['S256'],
          authorization_response_iss_parameter_supported: true,
        });
      case '/as/register': {
        let body = '';
        req.on('data', (c: Buffer) => (body += c.toString()));
        req.on('end', () => json(201, { ...JSON.parse(body), client_id: 'registered' }));
        return;
      }
      case '/as/authorize': {
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', 'the-code');
        back.searchParams.set('state', misbehaviour === 'state' ? 'forged' : url.searchParams.get('state')!);
        back.searchParams.set('iss', misbehaviour === 'iss' ? 'https://elsewhere.example' : `${origin}/as`);
        res.writeHead(302, { location: back.href }).end();
        return;
      }
      case '/as/token':
        if (misbehaviour === 'redirect') {
          res.writeHead(307, { location: 'http://localhost:9/steal' }).end();
          return;
        }
        return json(200, { access_token: 'a', token_type: 'bearer', expires_in: 60 });
      default:
        res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.close();
});

function memoryStore(): SecretStore {
  const map = new Map<string, string>();
  return {
    get: (k) => Promise.resolve(map.get(k)),
    set: (k, v) => Promise.resolve(void map.set(k, v)),
    delete: (k) => Promise.resolve(map.delete(k)),
    list: (prefix) => Promise.resolve([...map.keys()].filter((k) => k.startsWith(prefix)).sort()),
  };
}

/** Signs in as the user would, the browser following the authorization server's redirect. */
async function signIn(): Promise<unknown> {
  const config = {
    name: 'remote',
    transport: 'http',
    url: `${origin}/mcp`,
    headers: {},
  } as unknown as HttpServerConfig;
  const store = memoryStore();
  const client = new ServerOAuth(config, {
    store: () => Promise.resolve(store),
    log: createLogger({ level: 'error' }),
  });
  const flow = await client.begin(undefined);
  const answer = await fetch(flow.url, { redirect: 'manual' });
  await fetch(answer.headers.get('location')!).then((r) => r.text());
  return flow.completed;
}

describe('a misbehaving authorization server', () => {
  it('signs in when it behaves (the other cases differ in one way only)', async () => {
    misbehaviour = 'none';
    await expect(signIn()).resolves.toEqual(expect.objectContaining({ scopes: [] }));
  });

  it('an answer with another state is refused', async () => {
    misbehaviour = 'state';
    await expect(signIn()).rejects.toThrow(
      'remote: sign-in refused: the answer does not carry the state this sign-in sent (another sign-in, or a forged link)',
    );
  });

  it('an answer from another issuer is refused (mix-up)', async () => {
    misbehaviour = 'iss';
    await expect(signIn()).rejects.toThrow(
      `remote: sign-in refused: the answer comes from issuer https://elsewhere.example, not ${origin}/as`,
    );
  });

  it('metadata naming another issuer is refused before anything is sent to it', async () => {
    misbehaviour = 'issuer';
    await expect(signIn()).rejects.toThrow(
      `remote: the authorization server metadata fetched for ${origin}/as names another issuer (https://elsewhere.example); refused`,
    );
  });

  it('a token endpoint that redirects to another host is not followed', async () => {
    misbehaviour = 'redirect';
    await expect(signIn()).rejects.toThrow(
      `${origin} answered /as/token with a redirect to http://localhost:9; refused`,
    );
  });
});
