/**
 * `mcp-warden audit report FILE --html OUT`: the page written from a real trail (made by the
 * built gateway), opened in a real headless Chromium (Debian's), with no page errors and charts
 * that a screenshot shows drawn. Skipped, saying why, where Chromium is not installed (.ci/run
 * installs it from .ci/debian-packages).
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectHost, FAST_GATEWAY, fixture, runCli, tempDir, writeConfig } from './harness.js';
import { osPrincipal } from '../../src/core/principal.js';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`skipping the audit report browser test: ${CHROMIUM} is not installed`);

const POLICY = `
default: allow
rules:
  - id: no-add
    match: { tool: add }
    action: deny
    reason: Sums are not for models.
`;

/** A trail with calls that went through, were denied, and failed. */
async function makeTrail(): Promise<{ dir: string; audit: string }> {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'policy.yaml'), POLICY);
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      policies: ['policy.yaml'],
      audit: { file: './audit.jsonl' },
      servers: { up: fixture(), other: fixture(['--name', 'other']) },
    },
    dir,
  );
  const host = await connectHost(config);
  try {
    for (let i = 0; i < 5; i++)
      await host.client.callTool({ name: 'up__echo', arguments: { text: `hi ${i}` } });
    await host.client.callTool({ name: 'other__echo', arguments: { text: 'there' } });
    await host.client.callTool({ name: 'up__add', arguments: { a: 1, b: 2 } });
    await host.client.callTool({ name: 'up__fail', arguments: {} });
  } finally {
    await host.close();
  }
  return { dir, audit: path.join(dir, 'audit.jsonl') };
}

/**
 * Browser-side script (the test's TypeScript has no DOM types): decodes a PNG screenshot and
 * counts, in each box, the pixels within a small distance of that box's colour.
 */
function colouredPixels(
  png: string,
  boxes: readonly { x: number; y: number; width: number; height: number }[],
  colours: readonly string[],
): string {
  return `(async () => {
    const boxes = ${JSON.stringify(boxes)};
    const colours = ${JSON.stringify(colours)};
    const image = new Image();
    image.src = 'data:image/png;base64,${png}';
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = image.width;
    canvas.height = image.height;
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    return boxes.map((box, i) => {
      const [r, g, b] = [1, 3, 5].map((at) => parseInt(colours[i].slice(at, at + 2), 16));
      const data = context.getImageData(box.x, box.y, box.width, box.height).data;
      let count = 0;
      for (let p = 0; p < data.length; p += 4)
        if (Math.abs(data[p] - r) + Math.abs(data[p + 1] - g) + Math.abs(data[p + 2] - b) < 24) count++;
      return count;
    });
  })()`;
}

describe('audit report', () => {
  let trail: { dir: string; audit: string };
  beforeAll(async () => {
    trail = await makeTrail();
  });

  it('needs --html, and refuses a file that is not there', async () => {
    const noHtml = await runCli(['audit', 'report', trail.audit]);
    expect(noHtml.code).toBe(2);
    expect(noHtml.stderr).toContain('audit report needs --html OUT.html');
    const missing = await runCli(['audit', 'report', path.join(trail.dir, 'nope.jsonl'), '--html', 'x.html']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no audit log at');
  });

  it('writes one self-contained page with the numbers and records of the trail', async () => {
    const out = path.join(trail.dir, 'report.html');
    const run = await runCli(['audit', 'report', trail.audit, '--html', out]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('1 denial, 1 error');
    const html = readFileSync(out, 'utf8');
    // Nothing is fetched: no src or href points anywhere, and the policy forbids it anyway.
    expect(html).not.toMatch(/\s(src|href)=/);
    expect(html).toContain("default-src 'none'");
    expect(html).toContain('Hash chain: intact');
    expect(html).toContain('up__add (up): rule no-add');
    expect(html).toContain('up__fail (up): tool_error');
    // Every record names who made the call: on stdio, the OS user the gateway runs as.
    expect(html).toContain(osPrincipal().subject);
    expect(html).not.toContain('(not recorded)');
  });

  it('says on the page and on stderr when the chain is broken', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'warden-report-'));
    const audit = path.join(dir, 'audit.jsonl');
    const lines = readFileSync(trail.audit, 'utf8').trim().split('\n');
    lines.splice(2, 1); // a record removed from the middle
    writeFileSync(audit, `${lines.join('\n')}\n`);
    const out = path.join(dir, 'report.html');
    const run = await runCli(['audit', 'report', audit, '--html', out]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('the hash chain is broken');
    expect(readFileSync(out, 'utf8')).toContain('Hash chain: BROKEN');
  });

  describe.skipIf(!haveChromium)('in headless Chromium', () => {
    type Context = Awaited<
      ReturnType<(typeof import('playwright-core'))['chromium']['launchPersistentContext']>
    >;
    let context: Context | undefined;
    beforeAll(async () => {
      const { chromium } = await import('playwright-core');
      context = await chromium.launchPersistentContext(mkdtempSync(path.join(tmpdir(), 'warden-chromium-')), {
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
        viewport: { width: 1200, height: 900 },
        deviceScaleFactor: 1,
      });
    }, 60_000);
    afterAll(async () => {
      await context?.close();
    });

    it('draws every chart without a page error', async () => {
      const out = path.join(trail.dir, 'browser.html');
      expect((await runCli(['audit', 'report', trail.audit, '--html', out])).code).toBe(0);
      const page = await context!.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      page.on('request', (request) => {
        if (!request.url().startsWith('file:')) problems.push(`requested ${request.url()}`);
      });
      // A script error fails the test with that error, not with a wait that runs out.
      const broke = new Promise<never>((_, reject) => page.on('pageerror', reject));
      await page.goto(`file://${out}`);
      await Promise.race([page.waitForSelector('body[data-charts="drawn"]', { timeout: 30_000 }), broke]);
      expect(problems).toEqual([]);

      // The screenshot itself, read back pixel by pixel: each chart's box holds its series colour.
      const shot = await page.screenshot({ fullPage: true });
      const charts = {
        'chart-timeline': '#3c8d5a',
        'chart-effects': '#d9534f',
        'chart-rules': '#4a78c2',
        'chart-tools': '#6a5acd',
        'chart-servers': '#2a9d8f',
      };
      const boxes = await Promise.all(
        Object.keys(charts).map(async (id) => {
          const box = await page.locator(`#${id}`).boundingBox();
          expect(box, id).not.toBeNull();
          return box!;
        }),
      );
      const reader = await context!.newPage();
      const coloured = (await reader.evaluate(
        colouredPixels(shot.toString('base64'), boxes, Object.values(charts)),
      )) as number[];
      for (const [i, id] of Object.keys(charts).entries())
        expect(coloured[i], `pixels of ${id}'s series colour`).toBeGreaterThan(50);
      await reader.close();
      await page.close();
    }, 60_000);
  });
});
