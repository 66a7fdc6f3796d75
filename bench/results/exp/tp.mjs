// node tp.mjs MODE [calls] [cli] : gateway cpu µs/call and calls/s at 32 in flight
import { cpuMicros } from '/work/main/bench/lib/proc.mjs';
import { start, med } from './common.mjs';
const [mode = 'bare', callsArg = '20000', cli] = process.argv.slice(2);
const { child, prefix } = await start(mode, cli);
const params = JSON.stringify({ name: `${prefix}echo`, arguments: { text: 'hello from the warden bench' } });
async function conc(total) { let sent = 0; await Promise.all(Array.from({ length: 32 }, async () => { while (sent < total) { sent++; const r = await child.request('tools/call', params); if (!r?.content) throw new Error('bad'); } })); }
await conc(5000);
const calls = Number(callsArg); const cpu = [], rate = [];
const pid = mode === 'direct' ? child.pid : child.pid;
for (let i = 0; i < 5; i++) { const c0 = cpuMicros(pid); const t0 = performance.now(); await conc(calls); const ms = performance.now() - t0; cpu.push((cpuMicros(pid) - c0) / calls); rate.push(calls / ms * 1000); }
console.log(`${mode}: cpu µs/call ${med(cpu).toFixed(1)} (${cpu.map((x) => x.toFixed(1)).join(' ')}), calls/s ${med(rate).toFixed(0)}`);
await child.close();
