// node blob.mjs MODE [cli] [kib]: sequential large results, median ms
import { start, med } from './common.mjs';
const [mode = 'bare', cli, kib = '1024'] = process.argv.slice(2);
const { child, prefix } = await start(mode, cli);
const params = JSON.stringify({ name: `${prefix}blob`, arguments: { kib: Number(kib) } });
const times = [];
for (let i = 0; i < 40; i++) { const t = performance.now(); const r = await child.request('tools/call', params); times.push(performance.now() - t); if (!r.content) throw new Error('bad'); }
console.log(`${mode}: blob ${kib} KiB median ${med(times).toFixed(2)} ms, min ${Math.min(...times).toFixed(2)}`);
await child.close();
