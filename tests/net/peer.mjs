// The Node side of the differential test (tests/net/differential.sh): a
// server or a client that plays one scenario and prints its events, one a
// line. net_peer.cc is the same program on sluice; for every scenario the
// two print the same trace.
//
//   node peer.mjs server SCENARIO PORTFILE   (writes the port to PORTFILE)
//   node peer.mjs client SCENARIO PORT
//   node peer.mjs local SCENARIO              (one process: see `local`)
import net from 'node:net';
import { writeFileSync } from 'node:fs';

const [, , role, scenario, arg] = process.argv;
const out = (line) => process.stdout.write(line + '\n');

function record(s, who) {
  s.on('connect', () => out(`${who} connect`));
  s.on('ready', () => out(`${who} ready`));
  s.on('data', (d) => out(`${who} data ${d}`));
  s.on('end', () => out(`${who} end`));
  s.on('finish', () => out(`${who} finish`));
  s.on('timeout', () => out(`${who} timeout`));
  s.on('error', (e) => out(`${who} error ${e.code}`));
  s.on('close', (hadError) => out(`${who} close ${hadError === true}`));  // undefined (no handle) is false
}
const lookups = (s, who) => s.on('lookup', (err, address, family, host) => {
  if (err || address === '127.0.0.1') out(`${who} lookup ${err ? err.code : 'null'} ${address ?? '-'} ${family ?? '-'} ${host}`);
});
const cb = (who) => (err) => out(`${who} write-cb ${err ? err.code : 'ok'}`);

// What the server does with its one connection.
const servers = {
  'half-close': {
    allowHalfOpen: true,
    on(s) {
      let got = '';
      s.on('data', (d) => { got += d; });
      s.on('end', () => s.end(`got:${got}`, cb('server')));
    },
  },
  'server-ends-first': { allowHalfOpen: false, on(s) { s.end('hello', cb('server')); } },
  reset: { allowHalfOpen: false, on(s) { s.on('data', () => s.resetAndDestroy()); } },
  timeout: {
    allowHalfOpen: false,
    on(s) {
      s.setTimeout(50);
      s.on('timeout', () => { s.setTimeout(0); s.end('idle', cb('server')); });
    },
  },
  'server-close': { allowHalfOpen: false, on(s) { s.on('data', (d) => s.write(d, cb('server'))); } },
  // Issue 26, items 1-3: the server only records what arrives.
  'connect-write-destroy': { allowHalfOpen: false, on() {} },
  'held-write-destroy': { allowHalfOpen: false, on() {} },
  'end-then-bad-write': { allowHalfOpen: false, on() {} },
  'connect-destroy': { allowHalfOpen: false, on() {} },
  'reset-connecting': { allowHalfOpen: false, on() {} },
};

// What the client does.
const clients = {
  'half-close'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('connect', () => c.end('ping', cb('client')));
  },
  'server-ends-first'(port) {
    const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    record(c, 'client');
    c.on('end', () => c.end('late', cb('client')));
  },
  reset(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('connect', () => c.write('x', cb('client')));
  },
  timeout(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('data', () => {});
  },
  'server-close'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('connect', () => c.write('a', cb('client')));
    c.once('data', () => {
      // The server has stopped listening: this one is refused.
      const late = net.connect(port, '127.0.0.1');
      record(late, 'late');
      late.on('close', () => c.end());
    });
  },
  // Item 1: a write in 'connect', then destroy(): the bytes land, the
  // callback hears success, 'ready' still comes.
  'connect-write-destroy'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('connect', () => { c.write('a', cb('client')); c.destroy(); });
  },
  // Item 1: a write made before the connection, destroy() in 'connect'.
  'held-write-destroy'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.write('a', cb('client'));
    c.on('connect', () => c.destroy());
  },
  // Item 1: end('a') then a write after end in 'connect': 'a' lands.
  'end-then-bad-write'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.on('connect', () => { c.end('a', cb('end')); c.write('b', cb('late')); });
  },
  // Item 2: connect() then destroy() in one tick makes no connection; the
  // second socket is the server's only one.
  'connect-destroy'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.destroy();
    c.on('close', () => {
      const second = net.connect(port, '127.0.0.1');
      record(second, 'second');
      second.on('connect', () => second.end('second', cb('second')));
    });
  },
  // Item 3: resetAndDestroy() while connecting: 'connect', 'ready', then RST.
  'reset-connecting'(port) {
    const c = net.connect(port, '127.0.0.1');
    record(c, 'client');
    c.resetAndDestroy();
  },
};

// Scenarios played in one process (a server and its clients, or no peer at
// all): role `local`, the whole trace on stdout.
const refusedPort = (then) => {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1', () => {
    const port = probe.address().port;
    probe.close(() => then(port));
  });
};
const withServer = (onConnection, then) => {
  const srv = net.createServer(onConnection);
  srv.listen(0, '127.0.0.1', () => then(srv, srv.address().port));
  return srv;
};
const local = {
  // Item 4: a refused connection with writes waiting: the held write hears
  // ERR_SOCKET_CLOSED_BEFORE_CONNECTION after 'close', the buffered one and
  // end()'s callback the connection's error, after it.
  'refused-writes'() {
    refusedPort((port) => {
      const c = net.connect(port, '127.0.0.1');
      record(c, 'client');
      c.write('a', cb('w1'));
      c.write('b', cb('w2'));
      c.end(cb('end'));
    });
  },
  // Item 4: destroy(err) while connecting, with two writes waiting.
  'destroy-error-writes'() {
    refusedPort((port) => {
      const c = net.connect(port, '127.0.0.1');
      record(c, 'client');
      c.write('a', cb('w1'));
      c.write('b', cb('w2'));
      c.destroy(Object.assign(new Error('broken pipe'), { code: 'EPIPE' }));
    });
  },
  // Issue 34, item 18: connected, with a write in flight (8 MiB: more than
  // the kernel takes at once) and two buffered behind it, destroyed with an
  // error: 'error' on the next tick, then, as the handle closes, the
  // buffered writes are called back with the error, and 'close' comes last.
  // The write in flight has no callback here: Node calls it back with null
  // (libuv cancels it, and a destroyed socket's completion reports success),
  // sluice with ERR_STREAM_DESTROYED (docs/differences-from-node.md), after
  // 'error' too (net_test.cc).
  'destroy-error-inflight'() {
    const srv = withServer((s) => {
      s.on('data', () => {});
      s.on('error', () => {});
      s.on('close', () => srv.close());
    }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      record(c, 'client');
      c.on('connect', () => {
        c.write(Buffer.alloc(8 << 20, 'a'));
        // A later turn: buffered behind it (sluice sends a turn's writes
        // together, so those of the same turn would be in flight with it).
        setImmediate(() => {
          c.write('b', cb('w2'));
          c.write('c', cb('w3'));
          process.nextTick(() => out('tick after destroy'));
          c.destroy(Object.assign(new Error('broken pipe'), { code: 'EPIPE' }));
        });
      });
    });
  },
  // Item 7: the local address goes with destroy(); the remote one stays.
  'addresses-after-close'() {
    const srv = withServer((s) => { s.on('end', () => s.end()); s.on('close', () => srv.close()); }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      const show = (when) => out(`${when} local ${c.localAddress ?? '-'} ${c.localPort > 0} ${c.localFamily ?? '-'} remote ${c.remoteAddress} ${c.remotePort === port} ${c.remoteFamily}`);
      c.on('connect', () => { show('connect'); c.end(); });
      c.on('close', () => show('close'));
    });
  },
  // Item 8: 'listening' and EADDRINUSE come after a tick queued right after
  // listen(port, host).
  'listen-order'() {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1');
    process.nextTick(() => out('tick after listen'));
    srv.on('listening', () => {
      out('listening');
      const again = net.createServer();
      again.on('error', (e) => { out(`again error ${e.code} listening ${again.listening}`); srv.close(); });
      again.listen(srv.address().port, '127.0.0.1');
      process.nextTick(() => out('tick after second listen'));
    });
    srv.on('close', () => out('close'));
  },
  // Item 9 and close(cb): 'close' for every close(), the callbacks with it.
  'close-twice'() {
    const srv = net.createServer();
    srv.on('close', () => out('close'));
    srv.listen(0, '127.0.0.1', () => {
      srv.close((e) => out(`cb1 ${e ? e.code : 'ok'}`));
      srv.close((e) => out(`cb2 ${e ? e.code : 'ok'}`));
    });
  },
  'close-not-listening'() {
    const srv = net.createServer();
    srv.on('close', () => out('close'));
    srv.close((e) => out(`cb ${e ? e.code : 'ok'}`));
  },
  // unref(): a listening server, then an idle connection (both ends
  // unref'd), let the program end.
  'unref-server'() {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => { out('listening'); srv.unref(); });
    process.on('exit', () => out('exit'));
  },
  'unref-connection'() {
    const srv = withServer((s) => {
      out('server connection');
      s.unref();
      srv.unref();
    }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('connect', () => { out('client connect'); c.unref(); });
    });
    process.on('exit', () => out('exit'));
  },
  // ref() after unref(): the server keeps the program until it closes.
  'ref-again'() {
    const srv = net.createServer();
    srv.unref();
    srv.ref();
    srv.listen(0, '127.0.0.1', () => {
      out('listening');
      setTimeout(() => { out('closing'); srv.close(); }, 20);
    });
    process.on('exit', () => out('exit'));
  },
  // setTimeout(ms, callback): 'timeout' listeners first, then the callback.
  'set-timeout-callback'() {
    const srv = withServer((s) => { s.on('close', () => srv.close()); }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('timeout', () => out('timeout event'));
      c.setTimeout(30, () => { out('timeout callback'); c.destroy(); });
      c.on('close', () => out('close'));
    });
  },
  // Item 6: end(cb) after destroy(). With a write in flight, the callback
  // hears what the write's completion reports; with none, Node never calls
  // it (its Writable keeps it), and neither does sluice.
  'end-after-destroy-connecting'() {
    const srv = withServer((s) => { s.on('error', () => {}); s.resume(); }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      record(c, 'client');
      c.on('close', () => srv.close());
      c.write('a', cb('w'));
      c.destroy();
      c.end(cb('end'));
    });
  },
  'end-after-destroy-in-connect'() {
    const srv = withServer((s) => { s.on('error', () => {}); s.resume(); }, (_, port) => {
      const c = net.connect(port, '127.0.0.1');
      record(c, 'client');
      c.on('close', () => srv.close());
      c.on('connect', () => { c.write('a', cb('w')); c.destroy(); c.end(cb('end')); });
    });
  },
  'end-after-destroy-idle'() {
    const c = new net.Socket();
    record(c, 'client');
    c.destroy();
    c.end(cb('end'));
  },
  // Host names (dns.lookup off the loop): 'lookup' per address, the ones
  // of 127.0.0.1 printed only (a machine's localhost may have ::1 too).
  'lookup-localhost'() {
    const srv = withServer((s) => s.resume(), (_, port) => {
      const c = net.connect(port, 'localhost');
      lookups(c, 'client');
      record(c, 'client');
      c.on('connect', () => c.destroy());
      c.on('close', () => srv.close());
    });
  },
  'lookup-not-found'() {
    refusedPort((port) => {
      const c = net.connect(port, 'sluice-test.invalid');
      lookups(c, 'client');
      record(c, 'client');
      c.write('a', cb('w'));
    });
  },
  'lookup-destroy'() {
    const srv = withServer((s) => s.resume(), (_, port) => {
      const c = net.connect(port, 'localhost');
      lookups(c, 'client');
      record(c, 'client');
      c.write('a', cb('w'));
      c.on('close', () => srv.close());
      c.destroy();  // the lookup is on its way (a later turn may have its answer already)
    });
  },
  'is-ip'() {
    const inputs = ['127.0.0.1', '::1', 'x', '1.2.3.256', '01.2.3.4', '1.2.3', ' 1.2.3.4', '::ffff:1.2.3.4',
      'fe80::1%eth0', 'fe80::1%', '2001:db8::1:2:3:4:5', '1::2::3', 'localhost', ''];
    for (const i of inputs) out(`is_ip '${i}' ${net.isIP(i)} ${net.isIPv4(i)} ${net.isIPv6(i)}`);
  },
  // Issue 19 item 17: listen() fails and nobody listens to 'error': the
  // program ends with status 1 (Node throws).
  'unhandled-listen-error'() {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      out('listening');
      net.createServer().listen(srv.address().port, '127.0.0.1');
      setTimeout(() => { out('still running'); srv.close(); }, 200);
    });
  },
};
// Node has one loop: the sluice side of this one runs on a Boost.Asio io_context.
local['unhandled-listen-error-asio'] = local['unhandled-listen-error'];

if (role === 'local') {
  local[scenario]();
} else if (role === 'server') {
  const sc = servers[scenario];
  const srv = net.createServer({ allowHalfOpen: sc.allowHalfOpen });
  srv.on('listening', () => {
    out('server listening');
    writeFileSync(arg, String(srv.address().port));
  });
  srv.on('connection', (s) => {
    out('server connection');
    record(s, 'server');
    srv.close();  // one connection a run; 'close' once it has closed
    sc.on(s);
  });
  srv.on('close', () => out('server close'));
  srv.listen(0, '127.0.0.1');
} else {
  clients[scenario](Number(arg));
}
