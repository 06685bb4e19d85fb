#!/usr/bin/env node
// gen.mjs: the random differential test against Node. It generates random valid
// scenarios (the format of SCENARIOS.md and ext/EXTENSIONS.md), one per seed, runs
// each through Node's oracle (oracle.mjs) and through sluice-trace, and reports where
// the two traces differ.
//
//   node gen.mjs scenario SEED [FAMILY]            print the scenario of SEED
//   node gen.mjs run TRACE_BIN [--seeds A-B] [--family F] [--out DIR]
//                                                  run seeds A..B (default 1-1000) and print
//                                                  the mismatch rate per family; with --out,
//                                                  write each mismatch minimised to DIR
//   node gen.mjs minimise TRACE_BIN FILE.scn       print FILE minimised (still differs)
//   node gen.mjs corpus [--seeds A-B]              print the seeds' scenarios with Node's
//                                                  traces, the bundle random/corpus.txt that
//                                                  run-random.sh checks without Node
//
// The family of a seed is FAMILIES[seed % 7] unless --family names one (or an API
// family: from, pair, ops, abort, compose). A scenario is
// made valid against the oracle: a `complete` (or an async `from`'s `settle`) with
// nothing pending (which the oracle rejects, as sluice-trace does) is dropped and the
// rest kept.
// Needs Node v20, as oracle.mjs does. No npm dependencies.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runScenario } from './oracle.mjs';

export const FAMILIES = ['writable', 'readable', 'pipe', 'duplex', 'transform', 'pipeline', 'finished'];
// The API families (conformance/api/API.md) run only when --family names
// one: they are not in the seeds' rotation, so every seed keeps its scenario
// (random/corpus.txt), and `from` differs from Node by design in when 'close'
// comes (docs/differences-from-node.md), which its mismatches show.
export const API_FAMILIES = ['from', 'pair', 'ops', 'abort', 'compose'];
const ALL_FAMILIES = [...FAMILIES, ...API_FAMILIES];

// mulberry32: small, seedable, the same on every Node.
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)); // lo..hi
  const pick = (xs) => xs[int(0, xs.length - 1)];
  const chance = (p) => next() < p;
  return { int, pick, chance };
}

// ---- generation
function generate(seed, family) {
  const R = rng(seed * 7919 + ALL_FAMILIES.indexOf(family));
  const lines = [];
  const streams = []; // { name, kind: 'writable'|'readable'|'duplex', transform: bool }
  let chunkNo = 0;
  const chunk = () => {
    chunkNo += 1;
    const base = String.fromCharCode(96 + ((chunkNo - 1) % 26) + 1);
    return base.repeat(R.int(1, 3));
  };
  const opts = (choices) => choices.filter(([, p]) => R.chance(p)).map(([o]) => (typeof o === 'function' ? o() : o));
  const hwm = () => `hwm=${R.pick([0, 1, 2, 3, 4, 6, 8])}`;

  const add = (kind, name, flavour) => {
    let words;
    if (kind === 'writable') {
      words = ['writable', name, ...opts([[hwm, 0.5], ['writev', 0.3], ['final', 0.3], ['sync', 0.4],
        ['objectMode', 0.1], ['noAutoDestroy', 0.1], ['noEmitClose', 0.1],
        // A _destroy that waits for `complete` (API.md), in the compose family only, last
        // so that the other families' seeds draw as they did.
        ...(family === 'compose' ? [['destroy', 0.25]] : [])])];
    } else if (kind === 'readable') {
      words = ['readable', name, ...opts([[hwm, 0.5], ['objectMode', 0.1], ['noAutoDestroy', 0.1], ['noEmitClose', 0.1]])];
    } else if (flavour === 'duplex') {
      words = ['duplex', name, ...opts([[hwm, 0.4], ['writev', 0.2], ['final', 0.3], ['sync', 0.5],
        ['objectMode', 0.1], ['noAutoDestroy', 0.1], ['noEmitClose', 0.1], ['noHalfOpen', 0.2],
        // A pipeline stage must be readable or writable as its place asks (sluice checks that first).
        ...(family === 'duplex' ? [['noReadable', 0.1], ['noWritable', 0.1]] : []),
        ...(family === 'compose' ? [['destroy', 0.25]] : [])])];
    } else if (flavour === 'transform') {
      words = ['transform', name, ...opts([[hwm, 0.4], ['flush', 0.4], ['async', 0.4],
        ['objectMode', 0.1], ['noAutoDestroy', 0.1], ['noEmitClose', 0.1], ['noHalfOpen', 0.2]])];
    } else {
      words = ['passthrough', name, ...opts([[hwm, 0.4], ['objectMode', 0.1], ['noAutoDestroy', 0.1],
        ['noEmitClose', 0.1], ['noHalfOpen', 0.2]])];
    }
    // objectMode must agree along a pipe; keep it off when streams are connected.
    if (['pipe', 'pipeline', 'finished', 'compose'].includes(family)) words = words.filter((w) => w !== 'objectMode');
    lines.push(words.join(' '));
    const s = { name, kind, flavour, async: words.includes('async') };
    streams.push(s);
    return s;
  };

  const writables = () => streams.filter((s) => s.kind !== 'readable');
  const readables = () => streams.filter((s) => s.kind !== 'writable');
  const completable = () => streams.filter((s) => s.kind === 'writable' || s.flavour === 'duplex' || s.async);

  const writableOp = (w) => {
    const c = chunk();
    return R.pick([
      () => `write ${w} ${c}${R.chance(0.6) ? ' cb' : ''}`,
      () => `write ${w} ${c}${R.chance(0.6) ? ' cb' : ''}`,
      () => `end ${w}${R.chance(0.3) ? ` ${c}` : ''}${R.chance(0.4) ? ' cb' : ''}`,
      () => `cork ${w}`,
      () => `uncork ${w}`,
      () => `state ${w}`,
    ])();
  };
  const readableOp = (r) => {
    const c = chunk();
    return R.pick([
      () => `push ${r} ${c}`,
      () => `push ${r} ${c}`,
      () => `push ${r} EOF`,
      () => `unshift ${r} ${c}`,
      () => `read ${r}${R.chance(0.3) ? ` ${R.int(0, 4)}` : ''}`,
      () => `on ${r} ${R.pick(['data', 'readable'])}`,
      () => `pause ${r}`,
      () => `resume ${r}`,
      () => `state ${r}`,
    ])();
  };
  const anyOp = () => {
    const roll = R.int(0, 99);
    if (roll < 14) return 'tick';
    if (roll < 30 && completable().length) return `complete ${R.pick(completable()).name}${R.chance(0.08) ? ' error=boom' : ''}`;
    if (roll < 33) return `destroy ${R.pick(streams).name}${R.chance(0.4) ? ' error=bang' : ''}`;
    if (roll < 38 && (family === 'finished' || family === 'abort' || (family === 'pipeline' && roll < 35))) return finishedLine(R.pick(streams));
    if (roll < 42 && ['pipe', 'duplex', 'transform'].includes(family) && writables().length && readables().length) {
      const r = R.pick(readables()); const w = R.pick(writables().filter((s) => s !== r).concat([]));
      if (w) return `${R.chance(0.8) ? 'pipe' : 'unpipe'} ${r.name} ${w.name}`;
    }
    const ws = writables(); const rs = readables();
    if (ws.length && (!rs.length || R.chance(0.5))) return writableOp(R.pick(ws).name);
    return readableOp(R.pick(rs).name);
  };
  const finishedLine = (s) => {
    const words = ['finished', s.name];
    for (const o of ['readable', 'writable', 'error']) if (R.chance(0.25)) words.push(`${o}=${R.pick(['true', 'false'])}`);
    if (family === 'abort' && R.chance(0.5)) words.push('signal=c');
    return words.join(' ');
  };
  const middle = (name) => add('duplex', name, R.pick(['transform', 'transform', 'passthrough', 'duplex']));

  // Extension (API.md): Readable.from() with the default high-water mark
  // changed now and then, read, paused, resumed, piped and destroyed.
  const fromScenario = () => {
    if (R.chance(0.3)) lines.push(`set-default-hwm ${R.chance(0.5) ? 'objectMode ' : ''}${R.pick([0, 1, 2, 3])}`);
    const n = R.int(0, 5);
    const chunks = [];
    for (let k = 0; k < n; k++) chunks.push(chunk());
    const form = R.pick(['generator', 'generator', 'range', n === 1 ? 'string' : 'generator', 'async']);
    const words = ['from', 'r', n ? chunks.join(',') : '-'];
    if (R.chance(0.4)) words.push(hwm());
    const bytes = R.chance(0.25);
    if (bytes) words.push('bytes');
    if (form !== 'generator') words.push(form);
    if ((form === 'generator' || form === 'async') && R.chance(0.25)) words.push('error=boom');
    if (R.chance(0.1)) words.push('noAutoDestroy');
    if (R.chance(0.1)) words.push('noEmitClose');
    lines.push(words.join(' '));
    streams.push({ name: 'r', kind: 'readable' });
    const piped = R.chance(0.4);
    if (piped) {
      const w = ['writable', 'w', ...opts([[hwm, 0.5], ['sync', 0.4], ['writev', 0.2]])];
      if (!bytes) w.push('objectMode');
      lines.push(w.join(' '));
      streams.push({ name: 'w', kind: 'writable' });
      if (R.chance(0.8)) lines.push('pipe r w');
    }
    if (R.chance(0.2)) lines.push('get-default-hwm');
    for (let k = R.int(3, 14); k > 0; k--) {
      const roll = R.int(0, 99);
      if (roll < 20) lines.push('tick');
      else if (form === 'async' && R.chance(0.5)) lines.push('settle r'); // the oldest pull settles
      else if (roll < 35 && piped) lines.push('complete w');
      else if (roll < 40) lines.push(`destroy ${R.pick(streams).name}${R.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 45 && piped) lines.push(`${R.chance(0.5) ? 'pipe' : 'unpipe'} r w`);
      else {
        lines.push(R.pick([
          () => `read r${R.chance(0.3) ? ` ${R.int(0, 4)}` : ''}`,
          () => `read r`,
          () => `on r ${R.pick(['data', 'readable'])}`,
          () => 'pause r',
          () => 'resume r',
          () => 'state r',
        ])());
      }
    }
    return `${lines.join('\n')}\n`;
  };

  // Extension (API.md): a duplexPair, written, ended, read and destroyed on
  // both sides.
  const pairScenario = () => {
    const words = ['duplexpair', 'a', 'b', ...opts([[hwm, 0.5], ['objectMode', 0.15], ['noAutoDestroy', 0.1],
      ['noEmitClose', 0.1], ['noHalfOpen', 0.2]])];
    lines.push(words.join(' '));
    streams.push({ name: 'a', kind: 'duplex' }, { name: 'b', kind: 'duplex' });
    for (let k = R.int(4, 20); k > 0; k--) {
      const roll = R.int(0, 99);
      const side = R.pick(['a', 'b']);
      if (roll < 15) lines.push('tick');
      else if (roll < 19) lines.push(`destroy ${side}${R.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 55) lines.push(writableOp(side));
      else {
        lines.push(R.pick([
          () => `read ${side}${R.chance(0.3) ? ` ${R.int(0, 4)}` : ''}`,
          () => `on ${side} ${R.pick(['data', 'readable'])}`,
          () => `pause ${side}`,
          () => `resume ${side}`,
          () => `state ${side}`,
        ])());
      }
    }
    return `${lines.join('\n')}\n`;
  };

  // Extension (API.md): one iterator helper over a readable that is pushed
  // to, read and destroyed.
  const opsScenario = () => {
    lines.push(`readable r objectMode${R.chance(0.3) ? ` ${hwm()}` : ''}`);
    streams.push({ name: 'r', kind: 'readable' });
    const c = chunk();
    const helper = R.pick(['to-array r', 'for-each r', 'reduce r', `reduce r ${c}`, `some r ${c}`, `every r ${c}`,
      `find r ${c}`, 'map m r', `filter m r ${c}`, `take m r ${R.int(0, 3)}`, `drop m r ${R.int(0, 3)}`]);
    chunkNo = 0;
    const made = helper.includes(' m r');
    if (R.chance(0.3)) for (let k = R.int(1, 3); k > 0; k--) lines.push(`push r ${chunk()}`);
    lines.push(helper);
    if (made) {
      streams.push({ name: 'm', kind: 'readable' });
      lines.push(R.chance(0.7) ? 'on m data' : 'read m');
    }
    for (let k = R.int(3, 12); k > 0; k--) {
      const roll = R.int(0, 99);
      if (roll < 20) lines.push('tick');
      else if (roll < 25) lines.push(`destroy ${R.pick(streams).name}${R.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 35) lines.push(`state ${R.pick(streams).name}`);
      else if (roll < 40 && made) lines.push('read m');
      else lines.push(`push r ${chunk()}`);
    }
    if (R.chance(0.7)) lines.push('push r EOF');
    return `${lines.join('\n')}\n`;
  };

  // Extension (API.md): the helpers' options and flatMap, in half of the
  // `ops` seeds (decided and generated with a stream of their own, so the
  // other half keep their scenarios): an asynchronous helper whose calls
  // are settled in any order (a `settle` with nothing in flight is dropped,
  // as a `complete` is), a signal now and then.
  const asyncOpsScenario = (A) => {
    const ln = [`readable r objectMode${A.chance(0.3) ? ` hwm=${A.pick([1, 2, 4])}` : ''}`];
    const pushed = [];
    let no = 0;
    const next = () => { no += 1; const c = String.fromCharCode(96 + no); pushed.push(c); return c; };
    const signal = A.chance(0.3);
    if (signal) ln.push('abort-controller c');
    if (A.chance(0.3)) for (let k = A.int(1, 3); k > 0; k--) ln.push(`push r ${next()}`);
    const o = [];
    if (A.chance(0.7)) o.push(`concurrency=${A.int(1, 3)}`);
    if (A.chance(0.3)) o.push(`hwm=${A.int(0, 3)}`);
    if (signal && A.chance(0.8)) o.push('signal=c');
    const helper = A.pick(['map-async m r', 'filter-async m r b', 'for-each-async r', 'flat-map m r']);
    const made = helper.includes(' m r');
    ln.push([helper, ...o].join(' '));
    if (made) ln.push(A.chance(0.7) ? 'on m data' : 'read m');
    const settle = () => `settle r ${A.pick(pushed)}${A.chance(0.1) ? ' error=bang' : ''}`;
    for (let k = A.int(4, 14); k > 0; k--) {
      const roll = A.int(0, 99);
      if (roll < 20) ln.push('tick');
      else if (roll < 45 && pushed.length) ln.push(settle());
      else if (roll < 50) ln.push(`destroy ${A.pick(made ? ['r', 'm'] : ['r'])}${A.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 55) ln.push(`state ${A.pick(made ? ['r', 'm'] : ['r'])}`);
      else if (roll < 60 && made) ln.push('read m');
      else if (roll < 64 && signal) ln.push('abort c');
      else ln.push(`push r ${next()}`);
    }
    if (A.chance(0.7)) ln.push('push r EOF');
    // Let what is in flight complete, in any order.
    for (const c of [...pushed].sort(() => A.int(-1, 1))) {
      if (A.chance(0.5)) ln.push('tick');
      ln.push(`settle r ${c}`);
    }
    return `${ln.join('\n')}\n`;
  };

  // Extension (API.md): reduce's asynchronous reducer and signal, take's
  // and drop's signal (aborted before the first read now and then), and
  // flatMap over streams,
  // in a quarter of the `ops` seeds (decided with a stream of their own).
  const signalOpsScenario = (B) => {
    const ln = [`readable r objectMode${B.chance(0.3) ? ` hwm=${B.pick([1, 2, 4])}` : ''}`, 'abort-controller c'];
    const pushed = [];
    let no = 0;
    const next = () => { no += 1; const c = String.fromCharCode(96 + no); pushed.push(c); return c; };
    if (B.chance(0.3)) for (let k = B.int(1, 3); k > 0; k--) ln.push(`push r ${next()}`);
    if (B.chance(0.3)) ln.push('abort c');
    const helper = B.pick(['reduce-async r', 'reduce-async r x', 'reduce-async r x signal=c',
      `take m r ${B.int(0, 3)} signal=c`, `drop m r ${B.int(0, 3)} signal=c`,
      `flat-map m r stream${B.chance(0.5) ? ` concurrency=${B.int(1, 3)}` : ''}${B.chance(0.3) ? ' signal=c' : ''}`]);
    const made = helper.includes(' m r');
    ln.push(helper);
    if (made) ln.push(B.chance(0.7) ? 'on m data' : 'read m');
    for (let k = B.int(4, 14); k > 0; k--) {
      const roll = B.int(0, 99);
      if (roll < 20) ln.push('tick');
      else if (roll < 40 && pushed.length && !made) ln.push(`settle r ${B.pick(pushed)}${B.chance(0.1) ? ' error=bang' : ''}`);
      else if (roll < 45) ln.push(`destroy ${B.pick(made ? ['r', 'm'] : ['r'])}${B.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 52) ln.push(`state ${B.pick(made ? ['r', 'm'] : ['r'])}`);
      else if (roll < 58 && made) ln.push('read m');
      else if (roll < 64) ln.push('abort c');
      else ln.push(`push r ${next()}`);
    }
    if (B.chance(0.7)) ln.push('push r EOF');
    if (!made) {
      for (const c of pushed) {
        if (B.chance(0.5)) ln.push('tick');
        ln.push(`settle r ${c}`);
      }
    }
    return `${ln.join('\n')}\n`;
  };

  // Extension (API.md): compose() over a chain of two to four streams (a
  // readable or a duplex at the head, a writable or a duplex at the tail),
  // written, ended, read and destroyed through the composite k, with the
  // chain's sinks completed, and now and then a signal aborted.
  const composeScenario = () => {
    const signal = R.chance(0.3);
    if (signal) lines.push('abort-controller x');
    const chain = [];
    chain.push(R.chance(0.3) ? add('readable', 'r') : middle('t0'));
    for (let k = R.int(0, 2); k > 0; k--) chain.push(middle(`t${chain.length}`));
    chain.push(R.chance(0.3) ? add('writable', 'w') : middle(`t${chain.length}`));
    lines.push(`compose k ${chain.map((s) => s.name).join(' ')}${signal ? ' signal=x' : ''}`);
    const k = { name: 'k', kind: 'duplex', flavour: 'composite' };
    streams.push(k);
    const headWritable = chain[0].kind !== 'readable';
    const tailReadable = chain[chain.length - 1].kind !== 'writable';
    for (let n = R.int(4, 22); n > 0; n--) {
      const roll = R.int(0, 99);
      if (roll < 15) lines.push('tick');
      else if (roll < 30 && completable().length) lines.push(`complete ${R.pick(completable()).name}${R.chance(0.08) ? ' error=boom' : ''}`);
      else if (roll < 33) lines.push(`destroy ${R.pick(streams).name}${R.chance(0.4) ? ' error=bang' : ''}`);
      else if (roll < 40 && chain[0].kind === 'readable') lines.push(readableOp('r'));
      else if (roll < 70 && headWritable) lines.push(writableOp('k'));
      else if (roll < 90 && tailReadable) {
        lines.push(R.pick([
          () => `read k${R.chance(0.3) ? ` ${R.int(0, 4)}` : ''}`,
          () => `on k ${R.pick(['data', 'readable'])}`,
          () => 'pause k',
          () => 'resume k',
        ])());
      } else lines.push(`state ${R.pick(streams).name}`);
    }
    if (signal) lines.splice(R.int(lines.indexOf(lines.find((l) => l.startsWith('compose '))) + 1, lines.length), 0, 'abort x');
    if (R.chance(0.5)) {
      lines.push('tick');
      if (chain[0].kind === 'readable') lines.push('push r EOF');
      if (headWritable) lines.push('end k');
    }
    return `${lines.join('\n')}\n`;
  };

  switch (family) {
    case 'compose': return composeScenario();
    case 'ops': {
      const B = rng(seed * 7919 + 5);
      if (B.chance(0.25)) return signalOpsScenario(B);
      const A = rng(seed * 104729 + 17);
      return A.chance(0.5) ? asyncOpsScenario(A) : opsScenario();
    }
    case 'from': return fromScenario();
    case 'pair': return pairScenario();
    case 'writable': add('writable', 'w'); break;
    case 'readable': add('readable', 'r'); break;
    case 'pipe': add('readable', 'r'); add('writable', 'w'); if (R.chance(0.3)) add('writable', 'w2'); break;
    case 'duplex':
      add('duplex', 'd', 'duplex');
      if (R.chance(0.4)) add('readable', 'r');
      if (R.chance(0.4)) add('writable', 'w');
      break;
    case 'transform':
      add('duplex', 't', R.chance(0.75) ? 'transform' : 'passthrough');
      if (R.chance(0.4)) add('readable', 'r');
      if (R.chance(0.4)) add('writable', 'w');
      break;
    case 'pipeline':
    case 'finished':
    case 'abort': {
      // abort: one controller, used by the pipeline's signal, finished()'s and
      // addAbortSignal; `abort c` lands anywhere after it (below).
      if (family === 'abort') lines.push('abort-controller c');
      const shape = family === 'pipeline' ? 1 : R.int(0, 3);
      if (shape === 0) { // a lone stream
        const k = R.pick(['writable', 'readable', 'duplex']);
        if (k === 'duplex') middle('d'); else add(k, k[0]);
        break;
      }
      add('readable', 'r');
      const n = R.int(0, 2);
      for (let k = 1; k <= n; k++) middle(`t${k}`);
      // The last stream is a writable, or now and then a duplex (a transform, ...).
      if (R.chance(0.7)) add('writable', 'w'); else middle('w');
      // Now and then the streams are used before they are connected.
      if (R.chance(0.25)) for (let k = R.int(1, 5); k > 0; k--) lines.push(anyOp());
      if (shape === 3) lines.push(`pipe r ${n ? 't1' : 'w'}`);
      else if (shape !== 2) lines.push(`pipeline ${streams.map((s) => s.name).join(' ')}${family === 'abort' && R.chance(0.7) ? ' signal=c' : ''}`);
      if (family === 'abort') for (const s of streams) if (R.chance(0.4)) lines.push(`add-abort-signal c ${s.name}`);
      break;
    }
    default: throw new Error(`unknown family '${family}'`);
  }
  if (family === 'finished') for (let k = R.int(1, 2); k > 0; k--) lines.push(finishedLine(R.pick(streams)));

  for (let k = R.int(4, 22); k > 0; k--) lines.push(anyOp());
  if (family === 'abort') lines.splice(R.int(1, lines.length), 0, 'abort c');
  // Let the pipeline or the pipes run to the end now and then.
  if (streams[0].name === 'r' && streams.length > 1 && R.chance(0.5)) {
    lines.push('tick', 'push r EOF');
    if (R.chance(0.5)) lines.push(`end ${streams[streams.length - 1].name}`);
  }
  return `${lines.join('\n')}\n`;
}

// ---- running: Node's side in this process (oracle.mjs's runScenario), sluice's
// through sluice-trace.
const work = mkdtempSync(join(tmpdir(), 'sluice-gen-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const scnFile = join(work, 'random.scn');

async function nodeTrace(text) {
  const { trace, error } = await runScenario(text);
  return { trace: trace.map((l) => `${l}\n`).join(''), error };
}

function sluiceTrace(text, traceBin) {
  writeFileSync(scnFile, text);
  return spawnSync(traceBin, [scnFile], { encoding: 'utf8' });
}

// Node's trace of a scenario made valid: a rejected `complete` (or `settle`)
// line is dropped.
async function validate(text) {
  for (let tries = 0; tries < 100; tries++) {
    const { trace, error } = await nodeTrace(text);
    if (!error) return { text, trace };
    const m = /^line (\d+): (complete|settle): /.exec(error);
    if (!m) return null; // malformed otherwise: not a usable scenario
    const lines = text.split('\n');
    lines.splice(Number(m[1]) - 1, 1);
    text = lines.join('\n');
  }
  return null;
}

function differsFrom(text, trace, traceBin) {
  const ours = sluiceTrace(text, traceBin);
  return ours.status !== 0 || ours.stdout !== trace;
}

async function differs(text, traceBin) {
  const { trace, error } = await nodeTrace(text);
  return !error && differsFrom(text, trace, traceBin);
}

// Drops lines (then options and `cb`s) for as long as the scenario still differs.
async function minimise(text, traceBin) {
  let lines = text.trimEnd().split('\n');
  for (let changed = true; changed;) {
    changed = false;
    for (let i = lines.length - 1; i >= 0; i--) {
      const cand = lines.filter((_, k) => k !== i);
      if (await differs(`${cand.join('\n')}\n`, traceBin)) { lines = cand; changed = true; }
    }
    for (let i = 0; i < lines.length; i++) {
      const words = lines[i].split(' ');
      for (let j = words.length - 1; j >= 2; j--) {
        const cand = [...lines];
        cand[i] = words.filter((_, k) => k !== j).join(' ');
        if (await differs(`${cand.join('\n')}\n`, traceBin)) { lines = cand; changed = true; break; }
      }
    }
  }
  return `${lines.join('\n')}\n`;
}

function seedRange(args) {
  const k = args.indexOf('--seeds');
  const spec = k >= 0 ? args[k + 1] : '1-1000';
  const m = /^(\d+)-(\d+)$/.exec(spec ?? '');
  if (!m) usage();
  return [Number(m[1]), Number(m[2])];
}
const optArg = (args, name) => { const k = args.indexOf(name); return k >= 0 ? args[k + 1] : undefined; };
const familyOf = (seed, forced) => forced ?? FAMILIES[seed % FAMILIES.length];

function usage() {
  process.stderr.write('usage: gen.mjs scenario SEED [FAMILY] | run TRACE_BIN [--seeds A-B] [--family F] [--out DIR]'
    + ' | minimise TRACE_BIN FILE.scn | corpus [--seeds A-B]\n');
  process.exit(2);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'scenario') {
  const seed = Number(args[0]);
  if (!Number.isInteger(seed)) usage();
  const v = await validate(generate(seed, familyOf(seed, args[1])));
  if (!v) { process.stderr.write(`gen.mjs: seed ${seed} gives no valid scenario\n`); process.exit(1); }
  process.stdout.write(v.text);
} else if (cmd === 'run') {
  const traceBin = args[0];
  if (!traceBin) usage();
  const [lo, hi] = seedRange(args);
  const forced = optArg(args, '--family');
  if (forced && !ALL_FAMILIES.includes(forced)) usage();
  const out = optArg(args, '--out');
  if (out) mkdirSync(out, { recursive: true });
  const stats = new Map(ALL_FAMILIES.map((f) => [f, { run: 0, bad: 0, invalid: 0 }]));
  const found = new Set();
  for (let seed = lo; seed <= hi; seed++) {
    const family = familyOf(seed, forced);
    const st = stats.get(family);
    const v = await validate(generate(seed, family));
    if (!v) { st.invalid += 1; continue; }
    st.run += 1;
    if (!differsFrom(v.text, v.trace, traceBin)) continue;
    st.bad += 1;
    const small = out ? await minimise(v.text, traceBin) : v.text;
    const key = small;
    const fresh = !found.has(key);
    found.add(key);
    process.stdout.write(`mismatch: seed ${seed} (${family})${fresh ? '' : ', minimised as an earlier one'}\n`);
    if (out && fresh) writeFileSync(join(out, `seed-${seed}-${family}.scn`), small);
  }
  let run = 0; let bad = 0;
  for (const [f, s] of stats) {
    if (!s.run && !s.invalid) continue;
    run += s.run; bad += s.bad;
    process.stdout.write(`${f.padEnd(10)} ${String(s.bad).padStart(5)} / ${String(s.run).padStart(5)} differ`
      + ` (${(100 * s.bad / Math.max(s.run, 1)).toFixed(2)}%)${s.invalid ? `, ${s.invalid} seeds unusable` : ''}\n`);
  }
  process.stdout.write(`${'all'.padEnd(10)} ${String(bad).padStart(5)} / ${String(run).padStart(5)} differ`
    + ` (${(100 * bad / Math.max(run, 1)).toFixed(2)}%), ${found.size} distinct after minimising\n`);
  process.exitCode = bad ? 1 : 0;
} else if (cmd === 'minimise') {
  if (args.length !== 2) usage();
  const text = readFileSync(args[1], 'utf8');
  if (!(await differs(text, args[0]))) { process.stderr.write('gen.mjs: the traces agree; nothing to minimise\n'); process.exit(1); }
  process.stdout.write(await minimise(text, args[0]));
} else if (cmd === 'corpus') {
  const [lo, hi] = seedRange(args);
  process.stdout.write('# Random scenarios (tests/conformance/gen.mjs corpus) with Node v20\'s traces, for\n'
    + '# run-random.sh: each case is "=== NAME", its scenario, "--- node", Node\'s trace.\n'
    + `# Regenerate: node tests/conformance/gen.mjs corpus --seeds ${lo}-${hi} > tests/conformance/random/corpus.txt\n`);
  for (let seed = lo; seed <= hi; seed++) {
    const family = familyOf(seed, undefined);
    const v = await validate(generate(seed, family));
    if (!v) continue;
    process.stdout.write(`=== seed-${seed}-${family}\n${v.text}--- node\n${v.trace}`);
  }
} else {
  usage();
}
