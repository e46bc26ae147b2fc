// @mastra/client-js, unchanged, against a live mastra-django server.
// Run by tests/js/test_client_js.py, which starts the server and passes:
//   MASTRA_BASE_URL   http://127.0.0.1:<port>
//   MASTRA_TOKEN      alice's API token; MASTRA_OTHER_TOKEN bob's
// The agents are those of tests/agents/api/site.py (`echo`: local/echo with tools `add` and
// `delete` (needs an approval); `slow`: local/echo 40 ms per line).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MastraClient } from '@mastra/client-js';

const baseUrl = process.env.MASTRA_BASE_URL;
const token = process.env.MASTRA_TOKEN;
const otherToken = process.env.MASTRA_OTHER_TOKEN;
const client = (t = token, extra = {}) => new MastraClient({ baseUrl, headers: { Authorization: `Token ${t}` }, retries: 0, ...extra });
const alice = client();
const bob = client(otherToken);
let n = 0;
const fresh = (prefix) => `${prefix}-${process.pid}-${++n}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(predicate, what, timeoutMs = 8000) {
  const start = Date.now();
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
const endsRun = (c) => c.type === 'abort' || (c.type === 'finish' && !['tool-calls', 'suspended'].includes(c.payload?.stepResult?.reason));
const textOf = (chunks) => chunks.filter((c) => c.type === 'text-delta').map((c) => c.payload.text).join('');

test('getAgents lists the agents keyed by id; details has no id', async () => {
  const agents = await alice.listAgents();
  assert.deepEqual(Object.keys(agents), ['echo', 'slow', 'plain']);
  assert.equal(agents.echo.name, 'Echo');
  assert.deepEqual(JSON.parse(agents.echo.tools.add.inputSchema).json.required, ['a', 'b']);
  const details = await alice.getAgent('echo').details();
  assert.equal(details.name, 'Echo');
  assert.equal(details.id, undefined);
  assert.equal(details.tools.delete.requireApproval, true);
});

test('a wrong token is refused with 401 and the error body', async () => {
  await assert.rejects(client('nope').listAgents(), (error) => {
    assert.equal(error.status, 401);
    assert.equal(error.body.code, 'authentication_failed');
    return true;
  });
});

test('generate answers text, usage and steps', async () => {
  const result = await alice.getAgent('echo').generate('hello');
  assert.equal(result.text, 'echo: hello');
  assert.equal(result.finishReason, 'stop');
  assert.ok(result.usage.totalTokens > 0);
  assert.equal(result.steps.length, 1);
});

test('generate runs the tool loop with chunk-shaped calls and results', async () => {
  const result = await alice.getAgent('echo').generate('/tool add {"a": 2, "b": 5}', { maxSteps: 3 });
  assert.equal(result.toolCalls[0].payload.toolName, 'add');
  assert.deepEqual(result.toolCalls[0].payload.args, { a: 2, b: 5 });
  assert.deepEqual(result.toolResults[0].payload.result, { sum: 7 });
  assert.equal(result.text, 'echo: tool add returned {"sum": 7}');
  // the run's messages as Mastra's server answers them (MastraDBMessage): the call and its result
  // on one assistant message, no tool role
  assert.deepEqual(result.messages.map((m) => [m.role, m.content.format, m.content.parts.map((p) => p.type)]), [
    ['user', 2, ['text']], ['assistant', 2, ['tool-invocation']], ['assistant', 2, ['text']]]);
  assert.deepEqual(result.messages[1].content.parts[0].toolInvocation,
    { state: 'result', toolCallId: result.toolCalls[0].payload.toolCallId, toolName: 'add', args: { a: 2, b: 5 }, result: { sum: 7 } });
  // the response's answers as UI messages (the AI SDK's UIMessage) and as stored messages
  assert.deepEqual(result.response.uiMessages.map((m) => [m.role, m.parts.map((p) => [p.type, p.state ?? null])]), [
    ['assistant', [['tool-add', 'output-available']]], ['assistant', [['text', null]]]]);
  assert.deepEqual(result.response.uiMessages[0].parts[0].output, { sum: 7 });
  assert.deepEqual(result.response.dbMessages, result.messages.slice(1));
  // the steps as Mastra's: their type and their AI SDK content
  assert.deepEqual(result.steps.map((s) => [s.stepType, s.content.map((p) => p.type)]), [
    ['initial', ['tool-call', 'tool-result']], ['tool-result', ['text']]]);
  assert.deepEqual(result.steps[0].content[1].output, { type: 'json', value: { sum: 7 } });
});

test('stream + processDataStream gives every chunk in order', async () => {
  const response = await alice.getAgent('echo').stream('a\nb');
  const chunks = [];
  await response.processDataStream({ onChunk: async (chunk) => { chunks.push(chunk); } });
  assert.equal(chunks[0].type, 'start');
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(textOf(chunks), 'echo: a\necho: b');
  // step-finish and finish name the step's message and carry the response where Mastra's do
  const [stepStart, stepFinish, finish] = ['step-start', 'step-finish', 'finish'].map((t) => chunks.find((c) => c.type === t));
  assert.equal(stepFinish.payload.messageId, stepStart.payload.messageId);
  assert.equal(finish.payload.messageId, stepStart.payload.messageId);
  assert.deepEqual([stepFinish.payload.metadata.id, stepFinish.payload.metadata.modelId], ['echo-response', 'echo']);
  assert.equal(finish.payload.metadata.timestamp, stepFinish.payload.metadata.timestamp);
});

test('memory threads and messages with the envelopes the client reads', async () => {
  const threadId = fresh('mem');
  const remembered = await alice.getAgent('echo').generate('remember me', { memory: { thread: threadId, resource: 'alice' } });
  assert.deepEqual(remembered.messages.map((m) => [m.role, m.threadId, m.resourceId]),
    [['user', threadId, 'alice'], ['assistant', threadId, 'alice']]);
  assert.deepEqual(remembered.rememberedMessages, []);
  const created = await alice.createMemoryThread({ threadId: fresh('made'), title: 'Made here', agentId: 'echo' });
  assert.equal(created.title, 'Made here');
  assert.equal(created.resourceId, 'alice');
  const page = await alice.listMemoryThreads({ agentId: 'echo', resourceId: 'alice', perPage: 100 });
  assert.ok(page.threads.some((t) => t.id === threadId));
  assert.equal(typeof page.hasMore, 'boolean');
  const thread = alice.getMemoryThread({ threadId, agentId: 'echo' });
  assert.equal((await thread.get()).id, threadId);
  const messages = await thread.listMessages();
  assert.deepEqual(messages.messages.map((m) => m.role), ['user', 'assistant']);
  assert.equal(messages.total, 2);
  // Mastra's stored format: content.parts, as code written for Mastra reads it
  assert.deepEqual(messages.messages[0].content, { format: 2, parts: [{ type: 'text', text: 'remember me' }], content: 'remember me' });
  assert.equal(messages.messages[1].content.format, 2);
  assert.equal(messages.messages[1].content.parts[0].type, 'text');
  assert.ok(messages.messages[1].content.parts[0].text.includes('remember me'));
  // an answer's text as content.content, and the model that wrote it, as Mastra stores them
  assert.equal(messages.messages[1].content.content, messages.messages[1].content.parts[0].text);
  assert.deepEqual([messages.messages[1].content.metadata.modelId, messages.messages[1].content.metadata.provider],
    ['echo', 'local']);
  const renamed = await thread.update({ title: 'Renamed', metadata: {}, resourceId: 'alice' });
  assert.equal(renamed.title, 'Renamed');
  await assert.rejects(bob.getMemoryThread({ threadId, agentId: 'echo' }).get(), (e) => e.status === 404);
  await thread.delete();
  await assert.rejects(thread.get(), (e) => e.status === 404);
});

test('sendMessage wakes an idle thread; subscribeToThread streams it with seq', async () => {
  const threadId = fresh('sub');
  const agent = alice.getAgent('echo');
  const subscription = await agent.subscribeToThread({ resourceId: 'alice', threadId });
  const chunks = [];
  const reading = subscription.processDataStream({ onChunk: async (c) => { chunks.push(c); } });
  const accepted = await agent.sendMessage({ message: 'hi there', resourceId: 'alice', threadId });
  assert.equal(accepted.accepted, true);
  assert.equal(accepted.action, 'wake');
  assert.equal(accepted.signal.contents, 'hi there');
  await until(() => chunks.some(endsRun), 'the run to finish');
  assert.deepEqual(chunks.slice(0, 2).map((c) => c.type), ['start', 'data-user-message']);
  assert.deepEqual(chunks.map((c) => c.seq), chunks.map((_, i) => i + 1));
  assert.equal(textOf(chunks), 'echo: hi there');
  subscription.unsubscribe();
  await reading;
});

test('queueMessage runs after the active run; sendSignal reaches the thread', async () => {
  const threadId = fresh('queue');
  const agent = alice.getAgent('slow');
  const subscription = await agent.subscribeToThread({ resourceId: 'alice', threadId });
  const chunks = [];
  const reading = subscription.processDataStream({ onChunk: async (c) => { chunks.push(c); } });
  const first = await agent.sendMessage({ message: 'one\ntwo\nthree', resourceId: 'alice', threadId });
  const queued = await agent.queueMessage({ message: 'later', resourceId: 'alice', threadId });
  assert.equal(first.action, 'wake');
  assert.equal(queued.action, 'deliver');
  assert.notEqual(queued.runId, first.runId);
  await until(() => chunks.filter(endsRun).length === 2, 'two runs');
  const starts = chunks.filter((c) => c.type === 'start').map((c) => c.runId);
  assert.deepEqual(starts, [first.runId, queued.runId]);
  const signal = await agent.sendSignal({ signal: { type: 'system-reminder', contents: 'check the logs' }, resourceId: 'alice', threadId });
  assert.equal(signal.signal.tagName, 'system-reminder');
  await until(() => chunks.filter(endsRun).length === 3, 'the signal run');
  assert.ok(chunks.some((c) => c.type === 'data-signal' && c.data.contents === 'check the logs'));
  subscription.unsubscribe();
  await reading;
  // the signals are stored as Mastra stores them: role signal, their contents as parts
  const history = await alice.getMemoryThread({ threadId, agentId: 'slow' }).listMessages({ includeSystemReminders: true });
  const stored = history.messages.filter((m) => m.role === 'signal');
  assert.deepEqual(stored.map((m) => [m.type, m.content.parts[0].text, m.content.metadata.signal.type]),
    [['user', 'one\ntwo\nthree', 'user'], ['user', 'later', 'user'], ['system-reminder', 'check the logs', 'reactive']]);
});

test('abortThread stops the active run', async () => {
  const threadId = fresh('abort');
  const agent = alice.getAgent('slow');
  const subscription = await agent.subscribeToThread({ resourceId: 'alice', threadId });
  const chunks = [];
  const reading = subscription.processDataStream({ onChunk: async (c) => { chunks.push(c); } });
  await agent.sendMessage({ message: 'a\nb\nc\nd\ne\nf\ng\nh', resourceId: 'alice', threadId });
  await until(() => chunks.some((c) => c.type === 'text-delta'), 'the first text');
  assert.equal(await subscription.abort(), true);
  await until(() => chunks.some(endsRun), 'the abort');
  assert.equal(chunks.filter(endsRun)[0].type, 'abort');
  assert.deepEqual(await agent.abortThread({ resourceId: 'alice', threadId }), { aborted: false });
  subscription.unsubscribe();
  await reading;
});

test('sendToolApproval resumes a run suspended on an approval', async () => {
  const threadId = fresh('approve');
  const agent = alice.getAgent('echo');
  const subscription = await agent.subscribeToThread({ resourceId: 'alice', threadId });
  const chunks = [];
  const reading = subscription.processDataStream({ onChunk: async (c) => { chunks.push(c); } });
  await agent.sendMessage({ message: '/tool delete {"path": "/tmp/js"}', resourceId: 'alice', threadId });
  await until(() => chunks.some((c) => c.type === 'tool-call-approval'), 'the approval request');
  const request = chunks.find((c) => c.type === 'tool-call-approval');
  await assert.rejects(bob.getAgent('echo').sendToolApproval({ resourceId: 'bob', threadId, toolCallId: request.payload.toolCallId, approved: true }),
    (e) => e.status === 404);
  const ack = await agent.sendToolApproval({ resourceId: 'alice', threadId, toolCallId: request.payload.toolCallId, approved: true });
  assert.deepEqual(ack, { accepted: true, runId: request.runId, toolCallId: request.payload.toolCallId });
  await until(() => chunks.some(endsRun), 'the resumed run');
  const result = chunks.find((c) => c.type === 'tool-result');
  assert.deepEqual(result.payload.result, { deleted: '/tmp/js' });
  subscription.unsubscribe();
  await reading;
});

test('processDataStream with reconnect subscribes again after a dropped connection', async () => {
  const threadId = fresh('reconnect');
  let subscribes = 0;
  // the first subscription's connection drops right after the first run's finish event
  let reconnected = false;
  const droppingFetch = async (url, init) => {
    const response = await fetch(url, init);
    if (!String(url).endsWith('/threads/subscribe')) return response;
    if (++subscribes > 1) {
      // the server registers a subscription before it flushes `: connected`: once those bytes
      // arrive, a message sent now reaches this subscription
      const reader = response.body.getReader();
      const body = new ReadableStream({
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) { controller.close(); return; }
          reconnected = true;
          controller.enqueue(value);
        },
        cancel(reason) { return reader.cancel(reason); },
      });
      return new Response(body, { status: response.status, headers: response.headers });
    }
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    const body = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) { controller.close(); return; }
        controller.enqueue(value);
        seen += decoder.decode(value, { stream: true });
        if (seen.includes('"type":"finish"')) { await reader.cancel(); controller.close(); }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const agent = client(token, { fetch: droppingFetch }).getAgent('echo');
  const subscription = await agent.subscribeToThread({ resourceId: 'alice', threadId });
  const chunks = [];
  const reading = subscription.processDataStream({ onChunk: async (c) => { chunks.push(c); }, reconnect: { maxRetries: 3, delayMs: 50 } });
  await agent.sendMessage({ message: 'before', resourceId: 'alice', threadId });
  await until(() => chunks.some(endsRun), 'the first run');
  await until(() => reconnected, 'the second subscription to connect');
  await agent.sendMessage({ message: 'after', resourceId: 'alice', threadId });
  await until(() => chunks.filter(endsRun).length === 2, 'the run after the reconnect');
  assert.equal(textOf(chunks), 'echo: beforeecho: after');
  subscription.unsubscribe();
  await reading;
});

test('a subscription resumes after lastSeq (body) and Last-Event-ID (header)', async () => {
  const threadId = fresh('resume');
  await alice.getAgent('echo').generate('x', { memory: { thread: threadId, resource: 'alice' } });
  await alice.getAgent('echo').sendMessage({ message: 'seq', resourceId: 'alice', threadId });
  const read = async (init) => {
    const controller = new AbortController();
    const response = await fetch(`${baseUrl}/api/agents/echo/threads/subscribe`, { method: 'POST', signal: controller.signal, ...init });
    assert.equal(response.headers.get('content-type'), 'text/event-stream');
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes('"type":"finish"')) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    controller.abort();
    assert.ok(text.startsWith(': connected\n\n'));
    return text.split('\n\n').filter((b) => b.startsWith('data: ')).map((b) => JSON.parse(b.slice(6)));
  };
  const headers = { Authorization: `Token ${token}`, 'content-type': 'application/json' };
  const after2 = await read({ headers, body: JSON.stringify({ resourceId: 'alice', threadId, lastSeq: 2 }) });
  assert.equal(after2[0].seq, 3);
  const after4 = await read({ headers: { ...headers, 'Last-Event-ID': '4' }, body: JSON.stringify({ threadId }) });
  assert.equal(after4[0].seq, 5);
});

test('schedules: create, list, get, update, pause, resume, run, triggers and delete; another user sees none', async () => {
  const id = fresh('digest');
  const created = await alice.createSchedule({ agentId: 'echo', cron: '0 9 * * 1-5', prompt: 'the digest', timezone: 'Europe/Paris', id });
  assert.equal(created.id, `agent_${id}`);
  assert.deepEqual([created.agentId, created.prompt, created.status, created.timezone], ['echo', 'the digest', 'active', 'Europe/Paris']);
  assert.equal(typeof created.nextFireAt, 'number');
  assert.deepEqual((await alice.listSchedules({ agentId: 'echo' })).schedules.map((s) => s.id).filter((s) => s === created.id), [created.id]);
  assert.deepEqual(await alice.getSchedule(id), created); // Mastra's lookup by slug
  assert.equal((await bob.listSchedules()).schedules.some((s) => s.id === created.id), false);
  await assert.rejects(bob.getSchedule(created.id), (error) => error.status === 404 && error.body.code === 'schedule_not_found');
  const updated = await alice.updateSchedule(created.id, { prompt: 'the new digest', cron: '@hourly' });
  assert.deepEqual([updated.prompt, updated.cron], ['the new digest', '@hourly']);
  assert.equal((await alice.pauseSchedule(created.id)).status, 'paused');
  assert.equal((await alice.resumeSchedule(created.id)).status, 'active');
  const receipt = await alice.runSchedule(created.id);
  assert.deepEqual(Object.keys(receipt), ['scheduleId', 'claimId', 'scheduledFireAt']);
  assert.equal(receipt.claimId, `manual_${created.id}_${receipt.scheduledFireAt}`);
  let triggers = [];
  const start = Date.now();
  while (!(triggers[0]?.outcome === 'succeeded')) {
    if (Date.now() - start > 8000) throw new Error(`the manual fire did not succeed: ${JSON.stringify(triggers)}`);
    await sleep(50);
    ({ triggers } = await alice.listScheduleTriggers(created.id, { limit: 5 }));
  }
  assert.deepEqual([triggers.length, triggers[0].triggerKind, triggers[0].scheduledFireAt], [1, 'manual', receipt.scheduledFireAt]);
  assert.notEqual(triggers[0].runId, receipt.claimId); // the agent run it started
  assert.deepEqual(await alice.deleteSchedule(created.id), { message: 'Schedule deleted' });
  await assert.rejects(alice.getSchedule(created.id), (error) => error.status === 404);
  await assert.rejects(alice.createSchedule({ agentId: 'echo', cron: 'bad cron', prompt: 'p' }),
    (error) => error.status === 400 && error.body.code === 'invalid_cron');
});

test('agent.voice: speakers, listener, speak (audio bytes) and listen (a recording upload)', async () => {
  const voice = alice.getAgent('echo').voice;
  assert.deepEqual(await voice.getSpeakers(), [{ voiceId: 'low', name: 'Low' }, { voiceId: 'high', name: 'High' }]);
  assert.deepEqual(await voice.getListener(), { enabled: true });
  const response = await voice.speak('hello there', { speaker: 'high' });
  assert.equal(response.headers.get('content-type'), 'audio/wav');
  const audio = Buffer.from(await response.arrayBuffer());
  assert.equal(audio.subarray(0, 4).toString('latin1'), 'RIFF');
  assert.equal(audio.subarray(8, 12).toString('latin1'), 'WAVE');
  const heard = await voice.listen(new Blob([audio], { type: 'audio/wav' }), { language: 'en' });
  assert.deepEqual(heard, { text: `transcript of ${audio.length} bytes` });
  // an agent without a voice: no speakers, not listening, speaking refused as Mastra refuses it
  const plain = alice.getAgent('plain').voice;
  assert.deepEqual(await plain.getSpeakers(), []);
  assert.deepEqual(await plain.getListener(), { enabled: false });
  await assert.rejects(plain.speak('hi'), (e) => e.status === 400 && /No voice provider configured/.test(e.message));
  await assert.rejects(voice.listen(new Blob(['plain text'], { type: 'text/plain' })), (e) => e.status === 415);
});
