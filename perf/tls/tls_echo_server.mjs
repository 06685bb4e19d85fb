// Node's TLS echo server for tls-echo-compare.sh: node tls_echo_server.mjs DIR
// Prints "listening on PORT", then, at the first connection, "cipher NAME
// PROTOCOL" (as sluice_tls_echo_server does).
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

const dir = process.argv[2];
let told = false;
const srv = tls.createServer({ key: readFileSync(`${dir}/server.key`), cert: readFileSync(`${dir}/server.crt`) },
  (s) => {
    if (!told) {
      told = true;
      console.log(`cipher ${s.getCipher().standardName} ${s.getProtocol()}`);
    }
    s.setNoDelay(true);
    s.pipe(s);
  });
srv.listen(0, '127.0.0.1', () => console.log(`listening on ${srv.address().port}`));
