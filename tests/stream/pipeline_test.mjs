// Prints, with Node's streams, the logs tests/stream/pipeline_test.cc expects:
//   node tests/stream/pipeline_test.mjs            (every case)
//   node tests/stream/pipeline_test.mjs NAME       (one)
import { Readable, Writable, PassThrough, pipeline, finished } from 'node:stream';
import { pipeline as pipelinePromise } from 'node:stream/promises';
const log = [];
const tick = () => new Promise(r => setImmediate(r));
async function settle() { for (let i = 0; i < 20; i++) await tick(); }
function mkR(n) { const r = new Readable({ read() { log.push('_read ' + n); } }); watch(r, n); return r; }
function mkW(n, opts = {}) {
  const pend = [];
  const w = new Writable({ write(c, e, cb) { log.push('_write ' + n + ' ' + c); if (opts.fail) cb(new Error(opts.fail)); else cb(); }, final(cb) { log.push('_final ' + n); cb(); } });
  watch(w, n); return w;
}
function watch(s, n) { for (const ev of ['end', 'finish', 'close', 'error']) s.on(ev, (e) => log.push(ev + ' ' + n + (ev === 'error' ? ' ' + (e.code || e.message) : ''))); }
const scen = {
  async ok() { const r = mkR('r'), p = new PassThrough(); watch(p, 'p'); const w = mkW('w');
    pipeline(r, p, w, (e) => log.push('cb ' + (e ? (e.code || e.message) : 'ok')));
    r.push('a'); r.push('b'); r.push(null); await settle(); },
  async fail() { const r = mkR('r'), p = new PassThrough(); watch(p, 'p'); const w = mkW('w', { fail: 'boom' });
    pipeline(r, p, w, (e) => log.push('cb ' + (e ? (e.code || e.message) : 'ok')));
    r.push('a'); await settle(); },
  async premature() { const r = mkR('r'), p = new PassThrough(); watch(p, 'p'); const w = mkW('w');
    pipeline(r, p, w, (e) => log.push('cb ' + (e ? (e.code || e.message) : 'ok')));
    r.push('a'); await settle(); p.destroy(); await settle(); },
  async srcerror() { const r = mkR('r'), w = mkW('w');
    pipeline(r, w, (e) => log.push('cb ' + (e ? (e.code || e.message) : 'ok')));
    r.push('a'); await settle(); r.destroy(new Error('bad')); await settle(); },
  async noend() { const r = mkR('r'), w = mkW('w');
    // The callback form has no options: the promise form's end: false.
    pipelinePromise(r, w, { end: false }).then(() => log.push('cb ok'), (e) => log.push('cb ' + (e.code || e.message)));
    r.push('a'); r.push(null); await settle(); log.push('ended ' + w.writableEnded); w.end(); await settle(); },
  async fin_w() { const w = mkW('w'); finished(w, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); w.write('a'); w.end(); await settle(); },
  async fin_r_destroy() { const r = mkR('r'); finished(r, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); r.push('a'); r.destroy(); await settle(); },
  async fin_r_error() { const r = mkR('r'); finished(r, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); r.destroy(new Error('bad')); await settle(); },
  async fin_r_end() { const r = mkR('r'); finished(r, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); r.resume(); r.push('a'); r.push(null); await settle(); },
  async fin_already() { const w = mkW('w'); w.end(); await settle(); log.push('--'); finished(w, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); await settle(); },
  async fin_cleanup() { const w = mkW('w'); const c = finished(w, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); c(); w.end(); await settle(); },
  async fin_duplex() { const d = new PassThrough(); watch(d, 'd'); finished(d, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); d.end('x'); await settle(); log.push('--'); d.resume(); await settle(); },
  async fin_w_noclose() { const w = new Writable({ emitClose: false, write(c, e, cb) { cb(); }, final(cb) { log.push('_final w'); cb(); } }); watch(w, 'w'); finished(w, (e) => log.push('fin ' + (e ? e.code || e.message : 'ok'))); w.end(); await settle(); },
};
for (const name of process.argv[2] ? [process.argv[2]] : Object.keys(scen)) {
  log.length = 0;
  await scen[name]();
  console.log(name + ': ' + log.join('; '));
}
