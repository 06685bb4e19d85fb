// Node's tls as a peer of sluice's (tests/tls/tls_test.cc runs it):
//   node peer.mjs server DIR        a tls server (server.crt, client certs
//                                   from ca.crt required) that echoes; prints
//                                   "port N" once listening, then "done N" per
//                                   connection with the bytes it echoed
//   node peer.mjs client PORT DIR N sends N bytes of the pattern to a sluice
//                                   server, reads the echo to 'end', prints
//                                   "ok N authorized alpn" or "mismatch ..."
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

const [mode, a, b, c] = process.argv.slice(2);
const pattern = (n) => {
  const buf = Buffer.alloc(n);
  for (let i = 0; i < n; ++i) buf[i] = (i * 7 + 3) % 251;
  return buf;
};

if (mode === 'server') {
  const dir = a;
  const srv = tls.createServer({
    key: readFileSync(`${dir}/server.key`), cert: readFileSync(`${dir}/server.crt`),
    ca: readFileSync(`${dir}/ca.crt`), requestCert: true, rejectUnauthorized: true,
    ALPNProtocols: ['syslog'],
  }, (s) => {
    let n = 0;
    s.on('data', (d) => { n += d.length; s.write(d); });
    s.on('end', () => { s.end(); console.log(`done ${n} ${s.authorized} ${s.alpnProtocol} ${s.servername}`); });
    s.on('error', (e) => console.log(`error ${e.code}`));
  });
  srv.on('tlsClientError', (e) => console.log(`tlsClientError ${e.code}`));
  srv.listen(0, '127.0.0.1', () => console.log(`port ${srv.address().port}`));
  process.stdin.on('end', () => process.exit(0));  // the test closed our stdin
  process.stdin.resume();
} else if (mode === 'client') {
  const port = Number(a), dir = b, n = Number(c);
  const sent = pattern(n);
  const got = [];
  const s = tls.connect({ port, host: '127.0.0.1', ca: readFileSync(`${dir}/ca.crt`),
    key: readFileSync(`${dir}/client.key`), cert: readFileSync(`${dir}/client.crt`),
    ALPNProtocols: ['syslog'] }, () => {
    for (let off = 0; off < n; off += 65536) s.write(sent.subarray(off, Math.min(n, off + 65536)));
    s.end();
  });
  s.on('data', (d) => got.push(d));
  s.on('end', () => {
    const all = Buffer.concat(got);
    console.log(all.equals(sent) ? `ok ${all.length} ${s.authorized} ${s.alpnProtocol}` : `mismatch ${all.length}`);
  });
  s.on('error', (e) => { console.log(`error ${e.code} ${e.message}`); process.exitCode = 1; });
}
