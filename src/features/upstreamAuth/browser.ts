import { spawn } from 'node:child_process';

/**
 * Opens `url` in the user's browser: `$BROWSER` when set (run with the URL as its last
 * argument, after any words of its own), else the OS opener. Resolves false when nothing could
 * be started; the caller has printed the URL anyway, so the user can open it by hand.
 */
export function openBrowser(url: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  const browser = env['BROWSER']?.trim();
  const [command, ...args] =
    browser !== undefined && browser !== ''
      ? [...browser.split(/\s+/), url]
      : process.platform === 'darwin'
        ? ['open', url]
        : process.platform === 'win32'
          ? ['cmd', '/c', 'start', '""', url]
          : ['xdg-open', url];
  return new Promise((resolve) => {
    try {
      const child = spawn(command!, args, { stdio: 'ignore', detached: true, env });
      child.once('error', () => resolve(false));
      child.once('spawn', () => {
        child.unref();
        resolve(true);
      });
    } catch {
      resolve(false);
    }
  });
}
