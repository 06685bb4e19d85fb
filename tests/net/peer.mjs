// The Node side of the differential test (tests/net/differential.sh): a
// server or a client that plays one scenario and prints its events, one a
// line. net_peer.cc is the same program on sluice; for every scenario the
// two print the same trace.
//
//   node peer.mjs server SCENARIO PORTFILE   (writes the port to PORTFILE)
//   node peer.mjs client SCENARIO PORT
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
  s.on('close', (hadError) => out(`${who} close ${hadError}`));
}
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
};

if (role === 'server') {
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
