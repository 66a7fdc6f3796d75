#!/usr/bin/env node
/**
 * The `mcp-warden` binary: argument parsing, config loading, signals and exit codes. The only
 * module that calls `process.exit`. Human-facing output of subcommands goes to stdout; in
 * serve mode stdout carries JSON-RPC only and everything else goes to stderr.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from './config/load.js';
import type { WardenConfig } from './config/types.js';
import { ConfigError } from './errors.js';
import { createGateway } from './gateway.js';
import { createLogger, type WinstonLogger } from './logging/logger.js';
import { RpcErrorCode, serializeMessage } from './protocol/jsonRpc.js';
import { StreamTransport } from './transports/streamTransport.js';
import { listCatalog, formatCatalog } from './commands/tools.js';

const USAGE = `Usage:
  mcp-warden --config FILE            serve MCP on stdio (what a desktop host runs)
  mcp-warden check --config FILE      validate the config; exit 1 with file:line messages if invalid
  mcp-warden tools --config FILE      start the upstreams, print the merged tool catalog, exit
                   [--json]           ... as JSON
  mcp-warden --version | --help

The config file may also be given as MCP_WARDEN_CONFIG.`;

/** Exit codes: 0 ok, 1 a check or command found problems, 2 bad usage or invalid config. */
const EXIT_USAGE = 2;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function fail(message: string, code = EXIT_USAGE): never {
  process.stderr.write(`mcp-warden: ${message}\n`);
  process.exit(code);
}

async function readConfig(file: string | undefined): Promise<WardenConfig> {
  const chosen = file ?? process.env.MCP_WARDEN_CONFIG;
  if (chosen === undefined || chosen === '') fail(`no config file given (use --config FILE)\n\n${USAGE}`);
  try {
    return await loadConfig(path.resolve(chosen), { env: process.env });
  } catch (error) {
    if (error instanceof ConfigError) fail(`invalid config:\n${error.message}`);
    throw error;
  }
}

async function serve(config: WardenConfig): Promise<void> {
  const logger = createLogger(config.gateway.log);
  const host = new StreamTransport({
    input: process.stdin,
    output: process.stdout,
    maxLineBytes: config.gateway.maxMessageBytes,
    onJunk: (line, reason) => {
      logger.warn(`host sent a line that is not a JSON-RPC message (${reason})`);
      process.stdout.write(
        serializeMessage({
          jsonrpc: '2.0',
          id: null,
          error: { code: RpcErrorCode.ParseError, message: `Parse error: ${reason}` },
        }) + '\n',
      );
    },
    onOversize: (info) =>
      logger.error(`host sent a message of ${info.bytes} bytes, over gateway.maxMessageSize; ignored`),
  });
  const gateway = createGateway({ config, logger, host, version: version() });

  // Whatever happens, no child process outlives us (FIELD_NOTES "Availability").
  process.on('exit', () => gateway.killChildrenNow());

  let exiting = false;
  const shutdown = async (why: string, code: number): Promise<void> => {
    if (exiting) return;
    exiting = true;
    logger.info(`shutting down: ${why}`);
    // Hard stop well inside the 2 s a host gives us, whatever an upstream does.
    setTimeout(() => {
      gateway.killChildrenNow();
      process.exit(code);
    }, 1900).unref();
    try {
      await gateway.close();
    } catch (error) {
      logger.error(`error while shutting down: ${String(error)}`);
    }
    await closeLogger(logger);
    process.exit(code);
  };

  host.onclose = () => void shutdown('the host closed stdin', 0);
  process.on('SIGTERM', () => void shutdown('SIGTERM', 0));
  process.on('SIGINT', () => void shutdown('SIGINT', 0));
  process.on('SIGHUP', () => void shutdown('SIGHUP', 0));
  process.on('uncaughtException', (error) => {
    logger.error(`uncaught exception: ${error.stack ?? error.message}`);
    void shutdown('an internal error', 1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.error(
      `unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`,
    );
  });

  logger.info(`mcp-warden ${version()} serving ${config.servers.length} upstream(s) from ${config.file}`);
  await gateway.start();
}

async function closeLogger(logger: WinstonLogger): Promise<void> {
  await Promise.race([logger.close(), new Promise((r) => setTimeout(r, 500).unref())]);
}

async function main(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        config: { type: 'string', short: 'c' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
    });
  } catch (error) {
    fail(`${(error as Error).message}\n\n${USAGE}`);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values.version) {
    process.stdout.write(`${version()}\n`);
    return;
  }
  const [command = 'serve', ...rest] = positionals;
  if (rest.length > 0) fail(`unexpected argument "${rest[0]}"\n\n${USAGE}`);

  switch (command) {
    case 'serve':
      return serve(await readConfig(values.config));
    case 'check': {
      const config = await readConfig(values.config);
      const enabled = config.servers.filter((s) => !s.disabled).length;
      process.stdout.write(`${config.file}: ok (${config.servers.length} servers, ${enabled} enabled)\n`);
      return;
    }
    case 'tools': {
      const config = await readConfig(values.config);
      const logger = createLogger({ level: 'warn' });
      const listing = await listCatalog({ config, logger, version: version() });
      process.stdout.write(values.json ? `${JSON.stringify(listing, null, 2)}\n` : formatCatalog(listing));
      await closeLogger(logger);
      process.exit(listing.servers.some((s) => s.state === 'failed' || s.state === 'unavailable') ? 1 : 0);
    }
    // falls through: process.exit above never returns
    default:
      fail(`unknown command "${command}"\n\n${USAGE}`);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `mcp-warden: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
