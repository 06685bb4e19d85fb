#!/usr/bin/env node
// oracle.mjs: sluice's Node oracle. It runs one stream scenario (the format
// is SCENARIOS.md, beside this file; the duplex, transform, passthrough,
// pipeline and finished commands are ext/EXTENSIONS.md) through Node's own
// node:stream classes and prints the trace, one event a line. The stored
// NAME.trace files of tests/conformance/ and ext/ are its output;
// refresh-traces.sh rewrites or checks them.
//
//   node tests/conformance/oracle.mjs FILE.scn   or   node oracle.mjs - < FILE.scn
//
// Exit 0 after a run; 2 when the scenario is malformed or cannot be read, or
// when Node is not v20 (message on stderr). No npm dependencies.
import {
  Writable, Readable, Duplex, Transform, PassThrough, pipeline, finished, addAbortSignal,
  getDefaultHighWaterMark, setDefaultHighWaterMark, duplexPair, compose,
} from 'node:stream';
import { pipeline as pipelinePromise } from 'node:stream/promises';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// The traces pin Node v20's behaviour, and stream internals shift between
// releases (even within v20): refuse another major version, and say so when
// this v20 is not the one the stored traces were made with.
const REFERENCE_NODE = 'v20.20.2';
if (!process.version.startsWith('v20.')) {
  process.stderr.write(`oracle.mjs: needs Node v20 (the traces are v20's, made with ${REFERENCE_NODE}); this is ${process.version}\n`);
  process.exit(2);
}
if (process.version !== REFERENCE_NODE) {
  process.stderr.write(`oracle.mjs: warning: stored traces come from Node ${REFERENCE_NODE}, this is ${process.version}\n`);
}

const trace = [];
const emit = (line) => { trace.push(line); };

// WHAT of an error: its Node code where it has one, else its message.
const what = (err) => (err && (err.code ?? err.message)) ?? String(err);
// Chunks are Buffers in byte mode and the pushed/written strings in objectMode.
const show = (chunk) => (typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1'));

class ScenarioError extends Error {}
const fail = (lineNo, msg) => { throw new ScenarioError(`line ${lineNo}: ${msg}`); };

// name -> { kind: 'writable'|'readable'|'duplex', stream, pending: [sink callbacks, oldest first] }
// A duplex (Duplex, Transform, PassThrough) is both a writable and a readable.
const streams = new Map();
const controllers = new Map(); // name -> AbortController (Extension, API.md)

// Options shared by both kinds. Without hwm= a stream takes the default
// high-water mark, which runScenario() pins to v20's 16384 bytes or 16
// objects at the start of every run (a newer Node's 64 KiB cannot shift
// traces) and `set-default-hwm` changes.
const baseOptions = (o) => ({
  ...(o.hwm !== undefined ? { highWaterMark: o.hwm } : {}),
  objectMode: !!o.objectMode,
  autoDestroy: !o.noAutoDestroy,
  emitClose: !o.noEmitClose,
});

// Extension (API.md): `destroy`: a _destroy(err, cb) that prints its call
// and waits in the sink's queue; `complete` calls cb(err), passing the
// destroy's error on, and `complete error=MSG` cb(new Error(MSG)).
const destroyHook = (name, o, entry) => (err, cb) => {
  emit(`_destroy ${name}${err ? ` ${what(err)}` : ''}`);
  if (o.sync) cb(err); else entry.pending.push((e) => cb(e ?? err));
};

function makeWritable(name, o) {
  const entry = { kind: 'writable', pending: [] };
  // Every sink call prints its line, then completes at once (sync) or waits for `complete`.
  const sink = (line, cb) => {
    emit(line);
    if (o.sync) cb(); else entry.pending.push(cb);
  };
  const opts = {
    ...baseOptions(o),
    write(chunk, _encoding, cb) { sink(`_write ${name} ${show(chunk)}`, cb); },
  };
  if (o.writev) opts.writev = (chunks, cb) => sink(`_writev ${name} ${chunks.map((c) => show(c.chunk)).join(',')}`, cb);
  if (o.final) opts.final = (cb) => sink(`_final ${name}`, cb);
  if (o.destroy) opts.destroy = destroyHook(name, o, entry);
  const w = new Writable(opts);
  for (const ev of ['drain', 'finish', 'close', 'pipe', 'unpipe']) w.on(ev, () => emit(`${ev} ${name}`));
  w.on('error', (err) => emit(`error ${name} ${what(err)}`));
  entry.stream = w;
  streams.set(name, entry);
}

function makeReadable(name, o) {
  const r = new Readable({
    ...baseOptions(o),
    read() { emit(`_read ${name}`); }, // records the call; data only comes through `push`
  });
  for (const ev of ['end', 'close', 'pause', 'resume']) r.on(ev, () => emit(`${ev} ${name}`));
  r.on('error', (err) => emit(`error ${name} ${what(err)}`));
  streams.set(name, { kind: 'readable', stream: r, pending: [] });
}

// Extension (API.md): Readable.from(iterable, options). The iterable is the
// array of chunks itself with `range`, the one chunk with `string`, else a
// generator that prints `next R` at each pull and, after the last chunk,
// throws new Error(MSG) with `error=MSG`; with `async`, an async iterator
// whose pulls `settle R` answers.
function makeFrom(name, chunks, o) {
  const opts = {};
  if (o.hwm !== undefined) opts.highWaterMark = o.hwm;
  if (o.bytes) opts.objectMode = false;
  if (o.noAutoDestroy) opts.autoDestroy = false;
  if (o.noEmitClose) opts.emitClose = false;
  const pending = [];
  let iterable;
  if (o.string) iterable = chunks[0];
  else if (o.range) iterable = chunks;
  else if (o.async) {
    // An async iterator: next() prints `next R` and returns a promise that
    // `settle R` settles (the next chunk, then done, or the rejection of
    // error=MSG); return(), which Node's _destroy calls, prints `return R`.
    // No throw(), so that a destroy with an error calls return() too.
    let next = 0;
    iterable = {
      [Symbol.asyncIterator]() { return this; },
      next() {
        emit(`next ${name}`);
        return new Promise((resolve, reject) => pending.push(() => {
          if (next < chunks.length) resolve({ value: chunks[next++], done: false });
          else if (o.error !== undefined) reject(new Error(o.error));
          else resolve({ value: undefined, done: true });
        }));
      },
      return() {
        emit(`return ${name}`);
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  } else {
    iterable = (function* generate() {
      for (const c of chunks) {
        emit(`next ${name}`);
        yield c;
      }
      emit(`next ${name}`);
      if (o.error !== undefined) throw new Error(o.error);
    })();
  }
  const r = Readable.from(iterable, opts);
  for (const ev of ['end', 'close', 'pause', 'resume']) r.on(ev, () => emit(`${ev} ${name}`));
  r.on('error', (err) => emit(`error ${name} ${what(err)}`));
  streams.set(name, { kind: 'readable', stream: r, pending, async: !!o.async });
}

// Extension (API.md): duplexPair(options), two connected DuplexSides.
function makeDuplexPair(a, b, o) {
  const [sa, sb] = duplexPair(duplexOptions(o));
  listenDuplex(a, sa);
  listenDuplex(b, sb);
  streams.set(a, { kind: 'duplex', stream: sa, pending: [] });
  streams.set(b, { kind: 'duplex', stream: sb, pending: [] });
}

// Extension: one emitter, so each event prints once.
const DUPLEX_EVENTS = ['drain', 'finish', 'end', 'close', 'pipe', 'unpipe', 'pause', 'resume'];
function listenDuplex(name, d) {
  for (const ev of DUPLEX_EVENTS) d.on(ev, () => emit(`${ev} ${name}`));
  d.on('error', (err) => emit(`error ${name} ${what(err)}`));
}

// Extension: the per-side options of a Duplex.
const duplexOptions = (o) => ({
  ...baseOptions(o),
  ...(o.noHalfOpen ? { allowHalfOpen: false } : {}),
  ...(o.noReadable ? { readable: false } : {}),
  ...(o.noWritable ? { writable: false } : {}),
});

// Extension: a Duplex whose writable side is a recorded sink (as `writable`'s)
// and whose _read is recorded (as `readable`'s).
function makeDuplex(name, o) {
  const entry = { kind: 'duplex', pending: [] };
  const sink = (line, cb) => {
    emit(line);
    if (o.sync) cb(); else entry.pending.push(cb);
  };
  const opts = {
    ...duplexOptions(o),
    write(chunk, _encoding, cb) { sink(`_write ${name} ${show(chunk)}`, cb); },
    read() { emit(`_read ${name}`); },
  };
  if (o.writev) opts.writev = (chunks, cb) => sink(`_writev ${name} ${chunks.map((c) => show(c.chunk)).join(',')}`, cb);
  if (o.final) opts.final = (cb) => sink(`_final ${name}`, cb);
  if (o.destroy) opts.destroy = destroyHook(name, o, entry);
  const d = new Duplex(opts);
  listenDuplex(name, d);
  entry.stream = d;
  streams.set(name, entry);
}

// Extension: a Transform that upper-cases each chunk; with `async` each
// _transform/_flush waits for `complete`, which calls back with the data (or
// with the error of `complete T error=MSG`).
function makeTransform(name, o) {
  const entry = { kind: 'duplex', pending: [] };
  const settle = (done) => { if (o.async) entry.pending.push(done); else done(); };
  const opts = {
    ...duplexOptions(o),
    transform(chunk, _encoding, cb) {
      const c = show(chunk);
      emit(`_transform ${name} ${c}`);
      settle((err) => (err ? cb(err) : cb(null, c.toUpperCase())));
    },
  };
  if (o.flush) {
    opts.flush = (cb) => {
      emit(`_flush ${name}`);
      settle((err) => (err ? cb(err) : cb(null, 'FLUSH')));
    };
  }
  const t = new Transform(opts);
  listenDuplex(name, t);
  entry.stream = t;
  streams.set(name, entry);
}

function makePassThrough(name, o) {
  const p = new PassThrough(duplexOptions(o));
  listenDuplex(name, p);
  streams.set(name, { kind: 'duplex', stream: p, pending: [] });
}

function stateLine(name) {
  const { kind, stream: s } = streams.get(name);
  if (kind === 'duplex') return `${stateLine2(name, 'writable', s)}\n${stateLine2(name, 'readable', s)}`;
  return stateLine2(name, kind, s);
}

function stateLine2(name, kind, s) {
  if (kind === 'writable') {
    return `state ${name} length=${s.writableLength} needDrain=${s.writableNeedDrain} ended=${s.writableEnded}` +
      ` finished=${s.writableFinished} corked=${s.writableCorked} destroyed=${s.destroyed} writable=${s.writable}`;
  }
  // ended = push(null) seen (internal state.ended); Node's public readableEnded is endEmitted.
  const rs = s._readableState;
  return `state ${name} length=${s.readableLength} flowing=${s.readableFlowing} ended=${rs.ended}` +
    ` endEmitted=${rs.endEmitted} destroyed=${s.destroyed} readable=${s.readable}`;
}

// ---- Extension (API.md): the helpers' options (concurrency, highWaterMark,
// signal) and flatMap. An asynchronous helper's function prints its line and
// returns a promise that the scenario settles with `settle R CHUNK`, so the
// order of completions (and how many calls are in flight) is the scenario's.
// name of the source readable -> [{ chunk, resolve, reject }], oldest first
const inFlight = new Map();

function operatorOptions(words, { signal, fail }) {
  const o = {};
  for (const w of words) {
    const m = /^(concurrency|hwm|signal)=(.+)$/.exec(w);
    if (!m) fail(`unknown option '${w}'`);
    const key = m[1] === 'hwm' ? 'highWaterMark' : m[1];
    if (key in o) fail(`option '${m[1]}' given twice`);
    if (key === 'signal') o.signal = signal(m[2]);
    else if (!COUNT.test(m[2])) fail(`${m[1]} wants a non-negative integer, got '${m[2]}'`);
    else o[key] = Number(m[2]);
  }
  return o;
}

// map-async M R [OPTION]... | filter-async M R CHUNK [OPTION]... |
// for-each-async R [OPTION]... | flat-map M R [OPTION]...
function parseOperatorCommand(cmd, args, { stream, create, chunk, signal, fail }) {
  const makes = cmd !== 'for-each-async';
  const r = stream(makes ? 1 : 0, 'readable');
  let first = makes ? 2 : 1;
  let drop;
  if (cmd === 'filter-async') {
    if (args.length < 3) fail('filter-async: expected filter-async M R CHUNK [OPTION]...');
    drop = chunk(args[2]);
    first = 3;
  }
  // flat-map M R stream: fn returns Readable.from([CHUNK, CHUNK upper-cased]).
  const streamForm = cmd === 'flat-map' && args[first] === 'stream';
  if (streamForm) first += 1;
  const o = operatorOptions(args.slice(first), { signal, fail: (msg) => fail(`${cmd}: ${msg}`) });
  const m = makes ? create('readable') : undefined;
  const pending = (c) => new Promise((resolve, reject) => {
    if (!inFlight.has(r)) inFlight.set(r, []);
    inFlight.get(r).push({ chunk: c, resolve, reject });
  });
  const run = () => {
    const s = streams.get(r).stream;
    const opts = {};
    if (o.concurrency !== undefined) opts.concurrency = o.concurrency;
    if (o.highWaterMark !== undefined) opts.highWaterMark = o.highWaterMark;
    if (o.signal !== undefined) opts.signal = controllers.get(o.signal).signal;
    let out;
    switch (cmd) {
      case 'map-async':
        out = s.map((c) => { emit(`map ${r} ${show(c)}`); return pending(show(c)).then(() => show(c).toUpperCase()); }, opts);
        break;
      case 'filter-async':
        out = s.filter((c) => { emit(`test ${r} ${show(c)}`); return pending(show(c)).then(() => show(c) !== drop); }, opts);
        break;
      case 'flat-map':
        out = s.flatMap((c) => {
          emit(`flat-map ${r} ${show(c)}`);
          const items = [show(c), show(c).toUpperCase()];
          return streamForm ? Readable.from(items) : items;
        }, opts);
        break;
      case 'for-each-async':
        s.forEach((c) => { emit(`each ${r} ${show(c)}`); return pending(show(c)).then(() => {}); }, opts)
          .then(() => emit(`for-each ${r} -> ok`), (err) => emit(`for-each ${r} ${what(err)}`));
        return;
    }
    for (const ev of ['end', 'close', 'pause', 'resume']) out.on(ev, () => emit(`${ev} ${m}`));
    out.on('error', (err) => emit(`error ${m} ${what(err)}`));
    streams.set(m, { kind: 'readable', stream: out, pending: [] });
  };
  return { run };
}

// settle R CHUNK [error=MSG]: the oldest call in flight for CHUNK of a helper
// over R completes (with error=MSG, fails with new Error(MSG)).
function parseSettle(args, { stream, errorOpt, fail }) {
  if (args.length < 2 || args.length > 3) fail(`settle: expected 2-3 arguments, got ${args.length}`);
  const r = stream(0, 'readable');
  const c = args[1];
  const msg = errorOpt(args[2]);
  const run = () => {
    const calls = inFlight.get(r) ?? [];
    const k = calls.findIndex((p) => p.chunk === c);
    if (k < 0) fail(`settle: no call in flight for '${c}' over ${r}`);
    const [p] = calls.splice(k, 1);
    emit(`settle ${r} ${c}${msg === undefined ? '' : ` ${msg}`}`);
    if (msg === undefined) p.resolve(); else p.reject(new Error(msg));
  };
  return { run };
}

// ---- parsing: every line is checked (syntax, stream names and kinds) before anything runs.
const CHUNK = /^[\x21-\x7e]+$/; // one word of printable ASCII ('#' always starts a comment)
const COUNT = /^\d+$/;

function parse(text) {
  const kinds = new Map(); // stream name -> kind, as declared so far
  const signals = new Set(); // abort-controller names, as declared so far
  const steps = [];
  text.split('\n').forEach((raw, i) => {
    const n = i + 1;
    const words = raw.replace(/#.*/, '').trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) return;
    const [cmd, ...args] = words;
    const stream = (k, want) => { // argument k must name an existing stream (of kind `want`)
      const name = args[k];
      if (name === undefined) fail(n, `${cmd}: missing stream name`);
      if (!kinds.has(name)) fail(n, `${cmd}: unknown stream '${name}'`);
      // Extension: a duplex is a writable and a readable.
      if (want && kinds.get(name) !== want && kinds.get(name) !== 'duplex') fail(n, `${cmd}: '${name}' is not a ${want}`);
      return name;
    };
    const signal = (name) => { // must name an existing abort-controller
      if (!signals.has(name)) fail(n, `${cmd}: unknown abort-controller '${name}'`);
      return name;
    };
    const chunk = (word) => { if (!CHUNK.test(word)) fail(n, `${cmd}: bad chunk '${word}'`); return word; };
    const arity = (min, max) => {
      if (args.length < min || args.length > max) fail(n, `${cmd}: expected ${min === max ? min : `${min}-${max}`} arguments, got ${args.length}`);
    };
    const errorOpt = (word) => { // optional `error=MSG`
      if (word === undefined) return undefined;
      const m = /^error=(.+)$/.exec(word);
      if (!m) fail(n, `${cmd}: expected error=MSG, got '${word}'`);
      return m[1];
    };
    const options = (allowed) => {
      const o = {};
      for (const w of args.slice(1)) {
        const m = /^hwm=(.*)$/.exec(w);
        const key = m ? 'hwm' : w;
        if (!allowed.includes(key)) fail(n, `${cmd}: unknown option '${w}'`);
        if (key in o) fail(n, `${cmd}: option '${key}' given twice`);
        if (m && !COUNT.test(m[1])) fail(n, `${cmd}: hwm wants a non-negative integer, got '${m[1]}'`);
        o[key] = m ? Number(m[1]) : true;
      }
      return o;
    };
    const create = (kind) => {
      const name = args[0];
      if (name === undefined) fail(n, `${cmd}: missing stream name`);
      if (kinds.has(name)) fail(n, `${cmd}: stream '${name}' already exists`);
      kinds.set(name, kind);
      return name;
    };
    let run;
    switch (cmd) {
      case 'writable': {
        const o = options(['hwm', 'writev', 'final', 'sync', 'objectMode', 'noAutoDestroy', 'noEmitClose', 'destroy']);
        const name = create('writable');
        run = () => makeWritable(name, o);
        break;
      }
      case 'readable': {
        const o = options(['hwm', 'objectMode', 'noAutoDestroy', 'noEmitClose']);
        const name = create('readable');
        run = () => makeReadable(name, o);
        break;
      }
      case 'duplex': {
        const o = options(['hwm', 'writev', 'final', 'sync', 'objectMode', 'noAutoDestroy', 'noEmitClose',
          'noHalfOpen', 'noReadable', 'noWritable', 'destroy']);
        const name = create('duplex');
        run = () => makeDuplex(name, o);
        break;
      }
      case 'transform': {
        const o = options(['hwm', 'flush', 'async', 'objectMode', 'noAutoDestroy', 'noEmitClose', 'noHalfOpen']);
        const name = create('duplex');
        run = () => makeTransform(name, o);
        break;
      }
      case 'passthrough': {
        const o = options(['hwm', 'objectMode', 'noAutoDestroy', 'noEmitClose', 'noHalfOpen']);
        const name = create('duplex');
        run = () => makePassThrough(name, o);
        break;
      }
      case 'from': {
        // from R CHUNKS [hwm=N] [bytes] [range|string|async] [error=MSG] [noAutoDestroy] [noEmitClose]
        if (args.length < 2) fail(n, 'from: expected from R CHUNKS [OPTION]...');
        const list = args[1];
        const chunks = list === '-' ? [] : list.split(',');
        for (const c of chunks) if (!CHUNK.test(c)) fail(n, `from: bad chunk '${c}' in '${list}'`);
        const o = {};
        for (const w of args.slice(2)) {
          const m = /^(hwm|error)=(.+)$/.exec(w);
          const key = m ? m[1] : w;
          if (!['hwm', 'error', 'bytes', 'range', 'string', 'async', 'noAutoDestroy', 'noEmitClose'].includes(key)) fail(n, `from: unknown option '${w}'`);
          if (key in o) fail(n, `from: option '${key}' given twice`);
          if (key === 'hwm' && !COUNT.test(m[2])) fail(n, `from: hwm wants a non-negative integer, got '${m[2]}'`);
          o[key] = key === 'hwm' ? Number(m[2]) : m ? m[2] : true;
        }
        if ([o.range, o.string, o.async].filter(Boolean).length > 1) fail(n, 'from: range, string and async exclude each other');
        if (o.error !== undefined && (o.range || o.string)) fail(n, 'from: error= needs the generator (no range or string)');
        if (o.string && chunks.length !== 1) fail(n, 'from: string wants exactly one chunk');
        const name = create('readable');
        run = () => makeFrom(name, chunks, o);
        break;
      }
      case 'duplexpair': {
        // duplexpair A B [hwm=N] [objectMode] [noAutoDestroy] [noEmitClose] [noHalfOpen]
        if (args.length < 2) fail(n, 'duplexpair: expected duplexpair A B [OPTION]...');
        const b = args[1];
        args.splice(1, 1); // the options follow the first name, as for the other creating commands
        const o = options(['hwm', 'objectMode', 'noAutoDestroy', 'noEmitClose', 'noHalfOpen']);
        const a = create('duplex');
        if (kinds.has(b)) fail(n, `duplexpair: stream '${b}' already exists`);
        kinds.set(b, 'duplex');
        run = () => makeDuplexPair(a, b, o);
        break;
      }
      // Extension (API.md): the iterator helpers.
      case 'to-array': case 'for-each': case 'reduce': case 'some': case 'every': case 'find': {
        // to-array R | for-each R | reduce R [INITIAL] | some R CHUNK | every R CHUNK | find R CHUNK
        const wantsChunk = ['some', 'every', 'find'].includes(cmd);
        if (wantsChunk) arity(2, 2); else if (cmd === 'reduce') arity(1, 2); else arity(1, 1);
        const r = stream(0, 'readable');
        const arg = args.length === 2 ? chunk(args[1]) : undefined;
        const report = (v) => emit(`${cmd} ${r} -> ${v}`);
        const failed = (err) => emit(`${cmd} ${r} ${what(err)}`);
        const test = (c) => { emit(`test ${r} ${show(c)}`); return show(c) === arg; };
        run = () => {
          const s = streams.get(r).stream;
          let p;
          switch (cmd) {
            case 'to-array': p = s.toArray().then((a) => report(a.length ? a.map(show).join(',') : '-')); break;
            case 'for-each': p = s.forEach((c) => { emit(`each ${r} ${show(c)}`); }).then(() => report('ok')); break;
            case 'reduce': {
              const fn = (acc, c) => `${show(acc)}+${show(c)}`;
              p = (arg === undefined ? s.reduce(fn) : s.reduce(fn, arg)).then((v) => report(show(v)));
              break;
            }
            case 'some': p = s.some(test).then(report); break;
            case 'every': p = s.every((c) => !test(c)).then(report); break;
            case 'find': p = s.find(test).then((v) => report(v === undefined ? 'undefined' : show(v))); break;
          }
          p.catch(failed);
        };
        break;
      }
      case 'map': case 'filter': case 'take': case 'drop': {
        // map M R | filter M R CHUNK | take M R N [signal=C] | drop M R N [signal=C]: M is a new readable
        const counted = cmd === 'take' || cmd === 'drop';
        if (cmd === 'map') arity(2, 2); else arity(3, counted ? 4 : 3);
        const r = stream(1, 'readable');
        let arg;
        let sig;
        if (cmd === 'filter') arg = chunk(args[2]);
        if (counted) {
          if (!COUNT.test(args[2])) fail(n, `${cmd}: N must be a non-negative integer, got '${args[2]}'`);
          arg = Number(args[2]);
          if (args.length === 4) {
            if (!args[3].startsWith('signal=')) fail(n, `${cmd}: unknown option '${args[3]}'`);
            sig = signal(args[3].slice(7));
          }
        }
        const m = create('readable');
        run = () => {
          const s = streams.get(r).stream;
          let out;
          switch (cmd) {
            case 'map': out = s.map((c) => { emit(`map ${r} ${show(c)}`); return show(c).toUpperCase(); }); break;
            case 'filter': out = s.filter((c) => { emit(`test ${r} ${show(c)}`); return show(c) !== arg; }); break;
            case 'take': out = sig ? s.take(arg, { signal: controllers.get(sig).signal }) : s.take(arg); break;
            case 'drop': out = sig ? s.drop(arg, { signal: controllers.get(sig).signal }) : s.drop(arg); break;
          }
          for (const ev of ['end', 'close', 'pause', 'resume']) out.on(ev, () => emit(`${ev} ${m}`));
          out.on('error', (err) => emit(`error ${m} ${what(err)}`));
          streams.set(m, { kind: 'readable', stream: out, pending: [] });
        };
        break;
      }
      // Extension (API.md): the helpers' options and flatMap (operators block).
      case 'map-async': case 'filter-async': case 'for-each-async': case 'flat-map': {
        ({ run } = parseOperatorCommand(cmd, args, { stream, create, chunk, signal, fail: (msg) => fail(n, msg) }));
        break;
      }
      case 'reduce-async': {
        // reduce-async R [INITIAL] [signal=C]: the reducer prints `reduce R CHUNK`
        // and its promise, which `settle R CHUNK` settles, gives ACC+CHUNK.
        arity(1, 3);
        const r = stream(0, 'readable');
        let initial;
        let sig;
        for (const w of args.slice(1)) {
          if (w.startsWith('signal=')) {
            if (sig !== undefined) fail(n, "reduce-async: option 'signal' given twice");
            sig = signal(w.slice(7));
          } else if (initial !== undefined || sig !== undefined) {
            fail(n, 'reduce-async: expected reduce-async R [INITIAL] [signal=C]');
          } else {
            initial = chunk(w);
          }
        }
        // Node's options come after initialValue, whose presence (arguments.length) counts.
        if (sig !== undefined && initial === undefined) fail(n, 'reduce-async: signal=C needs an INITIAL');
        run = () => {
          const s = streams.get(r).stream;
          const fn = (acc, c) => {
            emit(`reduce ${r} ${show(c)}`);
            return new Promise((resolve, reject) => {
              if (!inFlight.has(r)) inFlight.set(r, []);
              inFlight.get(r).push({ chunk: show(c), resolve, reject });
            }).then(() => `${show(acc)}+${show(c)}`);
          };
          const opts = sig === undefined ? undefined : { signal: controllers.get(sig).signal };
          const p = initial === undefined ? s.reduce(fn) : s.reduce(fn, initial, opts);
          p.then((v) => emit(`reduce-async ${r} -> ${show(v)}`), (err) => emit(`reduce-async ${r} ${what(err)}`));
        };
        break;
      }
      case 'settle': {
        // settle R: the oldest pull of an async `from` settles; settle R
        // CHUNK [error=MSG]: a helper's call (parseSettle).
        if (args.length === 1) {
          const r = stream(0, 'readable');
          run = () => {
            const e = streams.get(r);
            if (!e.async) fail(n, `settle: ${r} is not an async from`);
            const settle = e.pending.shift();
            if (!settle) fail(n, `settle: ${r} has no pending pull`);
            settle();
          };
          break;
        }
        ({ run } = parseSettle(args, { stream, errorOpt, fail: (msg) => fail(n, msg) }));
        break;
      }
      case 'set-default-hwm': {
        // set-default-hwm [objectMode] N
        arity(1, 2);
        const objectMode = args.length === 2;
        if (objectMode && args[0] !== 'objectMode') fail(n, `set-default-hwm: expected 'objectMode', got '${args[0]}'`);
        const v = args[args.length - 1];
        if (!COUNT.test(v)) fail(n, `set-default-hwm: N must be a non-negative integer, got '${v}'`);
        run = () => setDefaultHighWaterMark(objectMode, Number(v));
        break;
      }
      case 'get-default-hwm': {
        // get-default-hwm [objectMode]
        arity(0, 1);
        if (args.length === 1 && args[0] !== 'objectMode') fail(n, `get-default-hwm: expected 'objectMode', got '${args[0]}'`);
        const objectMode = args.length === 1;
        run = () => emit(`get-default-hwm ${objectMode ? 'objectMode' : 'bytes'} -> ${getDefaultHighWaterMark(objectMode)}`);
        break;
      }
      case 'pipeline': {
        // pipeline S1 S2 ... [end=false] [signal=C]: S1 readable, the last writable, the middle ones duplexes.
        const rest = [...args];
        let signalName;
        if (rest.length > 0 && rest[rest.length - 1].startsWith('signal=')) signalName = signal(rest.pop().slice(7));
        const endFalse = rest.length > 0 && rest[rest.length - 1] === 'end=false';
        if (endFalse) rest.pop();
        if (rest.length < 2) fail(n, 'pipeline: expected at least 2 streams');
        const names = rest.map((name, k) => {
          if (!kinds.has(name)) fail(n, `pipeline: unknown stream '${name}'`);
          const kind = kinds.get(name);
          const want = k === 0 ? 'readable' : k === rest.length - 1 ? 'writable' : 'duplex';
          if (kind !== want && kind !== 'duplex') fail(n, `pipeline: '${name}' is not a ${want}`);
          return name;
        });
        const cb = (err) => emit(`pipeline-cb ${err ? what(err) : 'ok'}`);
        run = () => {
          const ss = names.map((name) => streams.get(name).stream);
          // The callback form takes no options; end=false and signal= go
          // through the promise form, whose settling is reported one
          // microtask later.
          const o = {};
          if (endFalse) o.end = false;
          if (signalName) o.signal = controllers.get(signalName).signal;
          if (endFalse || signalName) pipelinePromise(...ss, o).then(() => cb(), cb);
          else pipeline(...ss, cb);
        };
        break;
      }
      // Extension (API.md): compose().
      case 'compose': {
        // compose C [S1 ... SN] [signal=X]: C, a new duplex, is compose(S1, ..., SN);
        // compose() checks the kinds (and throws; a failed compose makes no C).
        // signal=X is addAbortSignal(X.signal, C), as readable.compose's option.
        const rest = [...args];
        let signalName;
        if (rest.length > 0 && rest[rest.length - 1].startsWith('signal=')) signalName = signal(rest.pop().slice(7));
        if (rest.length < 1) fail(n, 'compose: expected compose C [S1 ... SN] [signal=X]');
        const names = rest.slice(1);
        for (const name of names) if (!kinds.has(name)) fail(n, `compose: unknown stream '${name}'`);
        const c = create('duplex');
        run = () => {
          const d = compose(...names.map((name) => streams.get(name).stream));
          listenDuplex(c, d);
          streams.set(c, { kind: 'duplex', stream: d, pending: [] });
          if (signalName) addAbortSignal(controllers.get(signalName).signal, d);
        };
        break;
      }
      // Extension (API.md): AbortController / AbortSignal.
      case 'abort-controller': {
        // abort-controller C
        arity(1, 1);
        const c = args[0];
        if (signals.has(c) || kinds.has(c)) fail(n, `abort-controller: '${c}' already exists`);
        signals.add(c);
        run = () => controllers.set(c, new AbortController());
        break;
      }
      case 'abort': {
        // abort C
        arity(1, 1);
        const c = signal(args[0]);
        run = () => controllers.get(c).abort();
        break;
      }
      case 'add-abort-signal': {
        // add-abort-signal C S
        arity(2, 2);
        const c = signal(args[0]);
        const s = stream(1);
        run = () => addAbortSignal(controllers.get(c).signal, streams.get(s).stream);
        break;
      }
      case 'finished': {
        // finished S [readable=B] [writable=B] [error=B] [signal=C]
        arity(1, 5);
        const s = stream(0);
        const o = {};
        let signalName;
        for (const word of args.slice(1)) {
          if (word.startsWith('signal=')) {
            if (signalName) fail(n, "finished: option 'signal' given twice");
            signalName = signal(word.slice(7));
            continue;
          }
          const m = /^(readable|writable|error)=(true|false)$/.exec(word);
          if (!m) fail(n, `finished: expected readable=B, writable=B or error=B, got '${word}'`);
          if (m[1] in o) fail(n, `finished: option '${m[1]}' given twice`);
          o[m[1]] = m[2] === 'true';
        }
        run = () => finished(streams.get(s).stream,
          signalName ? { ...o, signal: controllers.get(signalName).signal } : o, (err) => emit(`finished ${s} ${err ? what(err) : 'ok'}`));
        break;
      }
      case 'write': {
        arity(2, 3);
        const w = stream(0, 'writable'); const c = chunk(args[1]);
        if (args.length === 3 && args[2] !== 'cb') fail(n, `write: third argument must be 'cb', got '${args[2]}'`);
        const cb = args.length === 3 ? (err) => emit(`cb ${w} ${c} ${err ? what(err) : 'ok'}`) : undefined;
        run = () => {
          const s = streams.get(w).stream;
          const ret = cb ? s.write(c, cb) : s.write(c);
          emit(`write ${w} ${c} -> ${ret}`);
        };
        break;
      }
      case 'end': {
        // `end W cb` is end with a callback; a chunk spelled `cb` cannot be passed to end.
        arity(1, 3);
        const w = stream(0, 'writable');
        const rest = args.slice(1);
        const hasCb = rest.length > 0 && rest[rest.length - 1] === 'cb';
        if (hasCb) rest.pop();
        if (rest.length > 1) fail(n, `end: expected 'end W [CHUNK] [cb]'`);
        const c = rest.length ? chunk(rest[0]) : undefined;
        const cb = hasCb ? (err) => emit(`end-cb ${w} ${err ? what(err) : 'ok'}`) : undefined;
        run = () => {
          const s = streams.get(w).stream;
          if (c !== undefined && cb) s.end(c, cb);
          else if (c !== undefined) s.end(c);
          else if (cb) s.end(cb);
          else s.end();
        };
        break;
      }
      case 'cork': case 'uncork': {
        arity(1, 1);
        const w = stream(0, 'writable');
        run = () => streams.get(w).stream[cmd]();
        break;
      }
      case 'destroy': {
        arity(1, 2);
        const s = stream(0); const msg = errorOpt(args[1]);
        run = () => {
          const st = streams.get(s).stream;
          if (msg === undefined) st.destroy(); else st.destroy(new Error(msg));
        };
        break;
      }
      case 'complete': {
        arity(1, 2);
        const w = stream(0, 'writable'); const msg = errorOpt(args[1]);
        run = () => {
          const cb = streams.get(w).pending.shift();
          if (!cb) fail(n, `complete: ${w} has no pending sink call`);
          if (msg === undefined) cb(); else cb(new Error(msg));
        };
        break;
      }
      case 'push': {
        arity(2, 2);
        const r = stream(0, 'readable');
        const c = args[1] === 'EOF' ? null : chunk(args[1]);
        run = () => emit(`push ${r} ${args[1]} -> ${streams.get(r).stream.push(c)}`);
        break;
      }
      case 'unshift': {
        arity(2, 2);
        const r = stream(0, 'readable'); const c = chunk(args[1]);
        run = () => streams.get(r).stream.unshift(c);
        break;
      }
      case 'read': {
        arity(1, 2);
        const r = stream(0, 'readable');
        if (args.length === 2 && !COUNT.test(args[1])) fail(n, `read: N must be a non-negative integer, got '${args[1]}'`);
        const size = args.length === 2 ? Number(args[1]) : undefined;
        run = () => {
          const s = streams.get(r).stream;
          const v = size === undefined ? s.read() : s.read(size);
          emit(`read ${r} -> ${v === null ? 'null' : show(v)}`);
        };
        break;
      }
      case 'on': {
        arity(2, 2);
        const r = stream(0, 'readable'); const ev = args[1];
        if (ev !== 'data' && ev !== 'readable') fail(n, `on: event must be 'data' or 'readable', got '${ev}'`);
        run = () => {
          const s = streams.get(r).stream;
          if (ev === 'data') s.on('data', (c) => emit(`data ${r} ${show(c)}`));
          else s.on('readable', () => emit(`readable ${r}`));
        };
        break;
      }
      case 'pause': case 'resume': {
        arity(1, 1);
        const r = stream(0, 'readable');
        run = () => streams.get(r).stream[cmd]();
        break;
      }
      case 'pipe': case 'unpipe': {
        arity(2, 2);
        const r = stream(0, 'readable'); const w = stream(1, 'writable');
        run = () => streams.get(r).stream[cmd](streams.get(w).stream);
        break;
      }
      case 'state': {
        arity(1, 1);
        const s = stream(0);
        run = () => emit(stateLine(s));
        break;
      }
      case 'tick':
        arity(0, 0);
        run = 'tick';
        break;
      default:
        fail(n, `unknown command '${cmd}'`);
    }
    steps.push({ n, run });
  });
  return steps;
}

// A `tick`: let setImmediate turns pass until one changes nothing (no new trace
// line, no change in pending sink calls). One turn already drains every
// process.nextTick and microtask; the extra turn confirms the quiet.
const pendingCount = () => [...streams.values()].reduce((sum, e) => sum + e.pending.length, 0);
async function tick() {
  for (let turn = 0; turn < 1000; turn++) {
    const before = `${trace.length}/${pendingCount()}`;
    await new Promise((resolve) => setImmediate(resolve));
    if (`${trace.length}/${pendingCount()}` === before) return;
  }
  throw new Error('tick: streams never went quiet');
}

// Runs one scenario's text and returns { trace, error }: the trace lines printed,
// and the message of a malformed scenario (null after a clean run). Exported so that
// gen.mjs runs many scenarios in one process; each run starts with no streams.
export async function runScenario(text) {
  trace.length = 0;
  streams.clear();
  controllers.clear();
  inFlight.clear();
  setDefaultHighWaterMark(false, 16384);
  setDefaultHighWaterMark(true, 16);
  try {
    const steps = parse(text);
    // Commands between ticks run back to back with no await: one synchronous turn.
    for (const { run } of steps) {
      if (run === 'tick') { await tick(); continue; }
      try {
        run();
      } catch (err) {
        if (err instanceof ScenarioError) throw err;
        emit(`throw ${what(err)}`);
      }
    }
    await tick(); // the implicit final tick
  } catch (err) {
    if (!(err instanceof ScenarioError)) throw err;
    const lines = [...trace];
    await tick(); // what the stopped run deferred must not run into the next one
    return { trace: lines, error: err.message };
  }
  return { trace: [...trace], error: null };
}

async function main() {
  const file = process.argv[2];
  let text;
  try {
    text = !file || file === '-' ? readFileSync(0, 'utf8') : readFileSync(file, 'utf8');
  } catch (err) {
    process.stderr.write(`oracle.mjs: cannot read ${file ?? 'stdin'}: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  const { trace: lines, error } = await runScenario(text);
  process.stdout.write(lines.map((l) => `${l}\n`).join(''));
  if (error) {
    process.stderr.write(`oracle.mjs: ${error}\n`);
    process.exitCode = 2;
  }
}

// Run as a script (not imported by gen.mjs).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
