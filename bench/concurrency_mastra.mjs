// bench/concurrency.py --mastra-dir: Mastra's own server (createNodeServer, LibSQL in a temporary file) with
// the bench's agent: `pinger`, an OpenAI-compatible chat model at $BENCH_MODEL_URL (the bench's mock),
// memory (lastMessages 10) and a tool `ping`. $BENCH_LAG_FILE: a 10 ms timer's lateness, as daphne's.
process.env.MASTRA_TELEMETRY_DISABLED ??= '1';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { ConsoleLogger } from '@mastra/core/logger';
import { Memory } from '@mastra/memory';
import { LibSQLStore } from '@mastra/libsql';
import { createNodeServer } from '@mastra/deployer/server';
import { z } from 'zod';

const port = Number(process.argv[2]);
const dir = mkdtempSync(join(tmpdir(), 'mastra-conc-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const ping = createTool({ id: 'ping', description: 'Answers pong.', inputSchema: z.object({ n: z.number().int().optional() }),
  execute: async input => ({ pong: input?.n ?? 0 }) });
const pinger = new Agent({ id: 'pinger', name: 'Pinger', instructions: 'Call ping twice, then answer.',
  model: { id: 'custom/mock', url: process.env.BENCH_MODEL_URL, apiKey: 'bench' }, tools: { ping },
  memory: new Memory({ options: { lastMessages: 10 } }) });
const mastra = new Mastra({
  agents: { pinger },
  storage: new LibSQLStore({ id: 'bench-concurrency', url: `file:${join(dir, 'mastra.db')}` }),
  logger: new ConsoleLogger({ name: 'bench-concurrency', level: 'error' }),
  notifications: { dispatch: { enabled: false } },
  server: { host: '127.0.0.1', port },
});
await createNodeServer(mastra, { tools: {} });
if (process.env.BENCH_LAG_FILE) {
  let samples = [], flushed = performance.now(), before = performance.now();
  setInterval(() => {
    const now = performance.now();
    samples.push(`${(Date.now() / 1000).toFixed(4)} ${(now - before - 10).toFixed(3)}\n`);
    before = now;
    if (now - flushed >= 500) { appendFileSync(process.env.BENCH_LAG_FILE, samples.join('')); samples = []; flushed = now; }
  }, 10);
}
console.log(`READY http://127.0.0.1:${port}`);
