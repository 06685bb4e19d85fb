#!/usr/bin/env node
// log_bench.js: Node's side of log_bench (perf/log_bench.cc runs it as one
// of its variants; perf/log-compare.sh passes it the path). The same lines as
// the C++ variants, written the way a Node program would: one
// fs.createWriteStream (flags 'a'), one write() of a string per line, and
// when write() returns false, wait for 'drain'. Time runs from the first
// line until 'close' (all written, fd closed).
//
//   node perf/log_bench.js --lines N --file PATH
//
// Prints one line, as the C++ children do:
//   result total_s=S producer_s=S rss_before=B peak_rss=B syscw=N wchar=N cpu_s=S thread_cpu_s=S
// (thread_cpu_s is the whole process's CPU time here too: Node writes from
// its thread pool, and that work belongs to the producer's bill.)
'use strict';

const fs = require('fs');

function parseArgs(argv) {
  const opts = { lines: 5000000, file: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--lines' && i + 1 < argv.length) {
      opts.lines = Number(argv[++i]);
      if (!(Number.isInteger(opts.lines) && opts.lines > 0)) {
        console.error(`log_bench.js: --lines wants a positive count, got '${argv[i]}'`);
        process.exit(2);
      }
    } else if (a === '--file' && i + 1 < argv.length) {
      opts.file = argv[++i];
    } else if (a === '--help' || a === '-h') {
      console.log('usage: node log_bench.js --lines N --file PATH');
      process.exit(0);
    } else {
      console.error(`log_bench.js: unknown argument '${a}' (try --help)`);
      process.exit(2);
    }
  }
  if (!opts.file) {
    console.error('log_bench.js: --file PATH is required');
    process.exit(2);
  }
  return opts;
}

// write(2) calls and bytes so far (Linux only; zeros elsewhere).
function readIo() {
  try {
    const text = fs.readFileSync('/proc/self/io', 'utf8');
    const get = (k) => Number((text.match(new RegExp(`^${k}: (\\d+)`, 'm')) || [0, 0])[1]);
    return { syscw: get('syscw'), wchar: get('wchar') };
  } catch {
    return { syscw: 0, wchar: 0 };
  }
}

const paths = ['/api/v1/items', '/api/v1/items/42', '/api/v1/users', '/healthz'];
const statuses = [200, 200, 200, 201, 204, 304, 404, 500];
const pad2 = (v) => (v < 10 ? '0' + v : '' + v);

// make_line() of log_bench.cc, in 32-bit arithmetic: keep the two in step.
function makeLine(i) {
  let x = Math.imul(i, 2654435761) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 2246822519) >>> 0;
  x = (x ^ (x >>> 13)) >>> 0;
  const t = i * 997 + (x & 255);  // microseconds since midnight
  const hh = Math.floor(t / 3600000000) % 24;
  const mm = Math.floor(t / 60000000) % 60;
  const ss = Math.floor(t / 1000000) % 60;
  const us = t % 1000000;
  return `2026-11-30T${pad2(hh)}:${pad2(mm)}:${pad2(ss)}.${String(us).padStart(6, '0')}Z INFO request ` +
    `id=${x % 1000000} path=${paths[x >>> 30]} status=${statuses[(x >>> 20) & 7]} took_us=${(x >>> 8) % 100000}\n`;
}

// VmHWM: resourceUsage().maxRSS would include the memory of the process
// that spawned this one (posix_spawn shares it until exec).
function peakRss() {
  try {
    const m = fs.readFileSync('/proc/self/status', 'utf8').match(/^VmHWM:\s+(\d+) kB/m);
    if (m) return Number(m[1]) * 1024;
  } catch {}
  return process.resourceUsage().maxRSS * 1024;  // maxRSS is in KiB
}

const opts = parseArgs(process.argv.slice(2));
const n = opts.lines;
const rssBefore = process.memoryUsage().rss;
const io0 = readIo();
const cpu0 = process.cpuUsage();

const out = fs.createWriteStream(opts.file, { flags: 'a' });
let failed = null;
out.on('error', (err) => {
  failed = failed || err;
});

let i = 0;
let lastWrite = 0n;
const start = process.hrtime.bigint();

function pump() {
  while (i < n) {
    const ok = out.write(makeLine(i++));
    if (!ok && i < n) {
      out.once('drain', pump);
      return;
    }
  }
  lastWrite = process.hrtime.bigint();
  out.end();
}

out.on('close', () => {
  const end = process.hrtime.bigint();
  if (failed) {
    console.error(`log_bench.js: ${failed.message}`);
    process.exitCode = 1;
    return;
  }
  const io1 = readIo();
  const cpu = process.cpuUsage(cpu0);  // microseconds, all threads
  console.log(`result total_s=${Number(end - start) / 1e9} producer_s=${Number(lastWrite - start) / 1e9} ` +
    `rss_before=${rssBefore} peak_rss=${peakRss()} syscw=${io1.syscw - io0.syscw} wchar=${io1.wchar - io0.wchar} ` +
    `cpu_s=${(cpu.user + cpu.system) / 1e6} thread_cpu_s=${(cpu.user + cpu.system) / 1e6}`);
});

pump();
