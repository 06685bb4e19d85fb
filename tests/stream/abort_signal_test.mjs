// Prints the logs tests/stream/abort_signal_test.cc expects, from Node v20.20.2:
// `node --expose-internals tests/stream/abort_signal_test.mjs`. Same streams as
// tests/stream/pipeline_test.mjs. Node v20's callback pipeline() takes no options;
// sluice's pipeline options are those of Node's pipelineImpl(streams, cb,
// opts), which stream/promises' pipeline() calls: that is the one used here,
// so that the callback comes when Node's does.
import { createRequire } from 'node:module';
import { Readable, Writable, PassThrough, finished, addAbortSignal } from 'node:stream';

const { pipelineImpl } = createRequire(import.meta.url)('internal/streams/pipeline');

function world() {
  const log = [];
  const what = (e) => (e ? e.code : 'ok');
  const watch = (s, name) => {
    for (const ev of ['end', 'finish', 'close']) s.on(ev, () => log.push(`${ev} ${name}`));
    s.on('error', (e) => log.push(`error ${name} ${what(e)}`));
    return s;
  };
  return {
    log,
    readable: (name, opts = {}) => watch(new Readable({ ...opts, read() { log.push(`_read ${name}`); } }), name),
    writable: (name) => watch(new Writable({
      write(c, _e, cb) { log.push(`_write ${name} ${c}`); cb(); },
      final(cb) { log.push(`_final ${name}`); cb(); },
    }), name),
    pass: (name) => watch(new PassThrough(), name),
    cb: (prefix) => (e) => log.push(`${prefix} ${what(e)}`),
  };
}

const cases = [];
const test = (name, fn) => cases.push([name, fn]);
const idle = () => new Promise((r) => setImmediate(() => setImmediate(r)));

test('add_abort_signal: abort after data destroys the readable', async () => {
  const t = world(); const ac = new AbortController();
  const r = addAbortSignal(ac.signal, t.readable('r'));
  r.push('a');
  await idle();
  t.log.push('abort'); ac.abort(); t.log.push('aborted');
  await idle();
  return t.log;
});
test('add_abort_signal: a signal aborted already destroys at once', async () => {
  const t = world(); const ac = new AbortController(); ac.abort();
  const r = t.readable('r');
  addAbortSignal(ac.signal, r); t.log.push(`destroyed ${r.destroyed}`);
  await idle();
  return t.log;
});
test('add_abort_signal: an abort after the end changes nothing', async () => {
  const t = world(); const ac = new AbortController();
  const r = addAbortSignal(ac.signal, t.readable('r', { autoDestroy: false }));
  r.resume(); r.push('a'); r.push(null);
  await idle();
  ac.abort(); t.log.push(`destroyed ${r.destroyed}`);
  await idle();
  return t.log;
});
test('pipeline: an abort destroys every stream and the callback gets the AbortError', async () => {
  const t = world(); const ac = new AbortController();
  const r = t.readable('r'); const p = t.pass('p'); const w = t.writable('w');
  pipelineImpl([r, p, w], t.cb('cb'), { signal: ac.signal });
  r.push('a');
  await idle();
  t.log.push('abort'); ac.abort(); t.log.push('aborted');
  await idle();
  return t.log;
});
test('pipeline: a signal aborted already aborts on a microtask', async () => {
  const t = world(); const ac = new AbortController(); ac.abort();
  const r = t.readable('r'); const w = t.writable('w');
  pipelineImpl([r, w], t.cb('cb'), { signal: ac.signal });
  t.log.push(`sync ${r.destroyed}`);
  await idle();
  return t.log;
});
test('finished: an abort calls back with the AbortError and leaves the stream', async () => {
  const t = world(); const ac = new AbortController();
  const w = t.writable('w');
  finished(w, { signal: ac.signal }, t.cb('cb'));
  w.write('a');
  await idle();
  t.log.push('abort'); ac.abort(); t.log.push('aborted');
  w.end();
  await idle();
  return t.log;
});
test('finished: a signal aborted already calls back on the next tick', async () => {
  const t = world(); const ac = new AbortController(); ac.abort();
  const w = t.writable('w');
  finished(w, { signal: ac.signal }, t.cb('cb'));
  t.log.push('sync');
  w.end();
  await idle();
  return t.log;
});
test('finished: an abort after the callback changes nothing', async () => {
  const t = world(); const ac = new AbortController();
  const w = t.writable('w');
  finished(w, { signal: ac.signal }, t.cb('cb'));
  w.end();
  await idle();
  ac.abort(); t.log.push('aborted');
  await idle();
  return t.log;
});

for (const [name, fn] of cases) console.log(`${name}\n  ${(await fn()).join('; ')}`);
