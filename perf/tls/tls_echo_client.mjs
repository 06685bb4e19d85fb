// The client of tls-echo-compare.sh, the same for every server: CONNECTIONS
// TLS connections, each sends SIZE bytes and waits for them back, until
// ROUND_TRIPS round trips in all. Prints {"seconds":S}. CIPHERS in the
// environment: the cipher suites the client offers (Node's default list
// otherwise), e.g. TLS_CHACHA20_POLY1305_SHA256.
//   node tls_echo_client.mjs PORT CA_FILE CONNECTIONS SIZE ROUND_TRIPS
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

const [port, caFile, connections, size, roundTrips] = process.argv.slice(2);
const ca = readFileSync(caFile);
const msg = Buffer.alloc(Number(size), 'x');
let left = Number(roundTrips), open = 0, start = 0, ready = 0;
const socks = [];
for (let i = 0; i < Number(connections); ++i) {
  const options = { port: Number(port), host: '127.0.0.1', ca };
  if (process.env.CIPHERS) options.ciphers = process.env.CIPHERS;
  const s = tls.connect(options, () => {
    s.setNoDelay(true);
    if (++ready === Number(connections)) {
      start = process.hrtime.bigint();
      for (const t of socks) t.write(msg);
    }
  });
  let got = 0;
  s.on('data', (d) => {
    got += d.length;
    if (got < msg.length) return;
    got -= msg.length;
    if (--left > 0) { s.write(msg); return; }
    if (left === 0) {
      console.log(JSON.stringify({ seconds: Number(process.hrtime.bigint() - start) / 1e9 }));
      for (const t of socks) t.destroy();
    }
  });
  s.on('error', (e) => { if (left > 0) { console.error(e.message); process.exit(1); } });
  socks.push(s);
  ++open;
}
