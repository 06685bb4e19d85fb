// idle_memory.js: Node's side of idle-memory-compare.sh, as idle_memory.cc:
// N connections over loopback, both ends in this process, each echoing SIZE
// bytes once and then quiet; after a warm-up round, heap in use
// (process.memoryUsage(): heapUsed + external, which holds the Buffers'
// arrayBuffers) and RSS per socket, both ends counted, after a full GC.
//
//   node --expose-gc idle_memory.js --connections N [--size 100] [--in-flight 256]
'use strict';
const net = require('net');

const opts = { connections: 1000, size: 100, 'in-flight': 256 };
for (let i = 2; i + 1 < process.argv.length; i += 2) opts[process.argv[i].replace(/^--/, '')] = Number(process.argv[i + 1]);
const gc = global.gc || (() => { throw new Error('run with --expose-gc'); });

function usage() {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed + m.external, rss: m.rss };
}

function clients(port, n, size, inFlight, done) {
  const payload = Buffer.alloc(size, 'x');
  const sockets = [];
  let echoed = 0;
  const startOne = () => {
    const c = net.connect(port, '127.0.0.1');
    sockets.push(c);
    let got = 0;
    c.on('error', (e) => { console.error(`idle_memory.js: client: ${e.message}`); process.exit(1); });
    c.on('connect', () => c.write(payload));
    c.on('data', (chunk) => {
      got += chunk.length;
      if (got !== size) return;
      if (sockets.length < n) startOne();
      if (++echoed === n) done(sockets);
    });
  };
  for (let i = 0; i < inFlight && sockets.length < n; ++i) startOne();
}

const server = net.createServer((s) => {
  s.on('error', () => {});
  s.on('data', (chunk) => s.write(chunk));
});
const settle = 200;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const inFlight = opts['in-flight'];
  clients(port, inFlight, opts.size, inFlight, (warm) => {
    for (const s of warm) s.destroy();
    setTimeout(() => {
      const base = usage();
      clients(port, opts.connections, opts.size, inFlight, () => {
        setTimeout(() => {
          const after = usage();
          const sockets = 2 * opts.connections;
          console.log(JSON.stringify({
            impl: 'node', connections: opts.connections, sockets,
            heap_per_socket: Math.round((after.heap - base.heap) / sockets),
            rss_per_socket: Math.round((after.rss - base.rss) / sockets),
          }));
          process.exit(0);
        }, settle);
      });
    }, settle);
  });
});
