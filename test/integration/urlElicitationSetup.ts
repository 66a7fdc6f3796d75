/**
 * What the URL-mode elicitation tests share: server-everything's URL tool, and a fixture server
 * told to ask a URL-mode question.
 */
import { FAST_GATEWAY, NODE, serverBin, textOf, writeConfig } from './harness.js';

export const TOOL = 'everything__trigger-url-elicitation';
export const URL_ASKED = 'https://example.com/authorize';

/** A gateway in front of server-everything. */
export function config(): string {
  return writeConfig({
    gateway: FAST_GATEWAY,
    servers: { everything: { command: NODE, args: [serverBin('everything')] } },
  });
}

/** A server that asks anyway (the fixture does what it is told) gets an error naming the mode. */
export const ASK = {
  name: 'up__ask_client',
  arguments: {
    method: 'elicitation/create',
    params: { mode: 'url', url: URL_ASKED, message: 'Open it', elicitationId: 'e-3' },
  },
};
export const refusal = (result: object) =>
  (JSON.parse(textOf(result)) as { error?: { message: string } }).error;
