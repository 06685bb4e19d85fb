#!/usr/bin/env node
// devnull.js: Node's side of devnull-compare.sh. The same workload as
// sluice-devnull, written the way a Node program would write it: batches of
// 1000 writes of a 56-byte line to fs.createWriteStream('/dev/null'), each
// with a callback that counts it as cleared, the next batch from
// setImmediate, for --duration seconds; then end() and wait for 'finish'.
//
//   node perf/devnull.js [--duration S] [--buffer]
//
// --buffer writes one preallocated Buffer instead of a string (no encoding
// per write). Prints one JSON line:
//   {"name":"node","issued":N,"cleared":N,"cleared_per_s":X,"peak_rss_bytes":Y}
'use strict';

const fs = require('fs');

function parseArgs(argv) {
  const opts = { duration: 3, buffer: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--duration' && i + 1 < argv.length) {
      opts.duration = Number(argv[++i]);
      if (!(opts.duration > 0)) {
        console.error(`devnull.js: --duration wants a positive number of seconds, got '${argv[i]}'`);
        process.exit(2);
      }
    } else if (a === '--buffer') {
      opts.buffer = true;
    } else if (a === '--help' || a === '-h') {
      console.log('usage: node devnull.js [--duration S] [--buffer]');
      process.exit(0);
    } else {
      console.error(`devnull.js: unknown argument '${a}' (try --help)`);
      process.exit(2);
    }
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const line = 'a'.repeat(55) + '\n';
const chunk = opts.buffer ? Buffer.from(line) : line;
const batch = 1000;

const out = fs.createWriteStream('/dev/null');
let issued = 0;
let cleared = 0;
let failed = null;
const onWritten = (err) => {
  if (err) failed = failed || err;
  else cleared++;
};
out.on('error', (err) => {
  failed = failed || err;
});

const start = process.hrtime.bigint();
const stopAt = start + BigInt(Math.round(opts.duration * 1e9));

function writeBatch() {
  for (let i = 0; i < batch; i++) out.write(chunk, onWritten);
  issued += batch;
  if (process.hrtime.bigint() < stopAt && !failed) setImmediate(writeBatch);
  else out.end();
}

out.on('finish', () => {
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9;
  if (failed) {
    console.error(`devnull.js: ${failed.message}`);
    process.exitCode = 1;
  }
  // maxRSS is in KiB.
  const peak = process.resourceUsage().maxRSS * 1024;
  console.log(JSON.stringify({
    name: 'node',
    issued,
    cleared,
    cleared_per_s: Math.round(cleared / elapsed),
    peak_rss_bytes: peak,
  }));
});

setImmediate(writeBatch);
