// Node's TLS echo server for tls-echo-compare.sh: node tls_echo_server.mjs DIR
import { readFileSync } from 'node:fs';
import tls from 'node:tls';

const dir = process.argv[2];
const srv = tls.createServer({ key: readFileSync(`${dir}/server.key`), cert: readFileSync(`${dir}/server.crt`) },
  (s) => { s.setNoDelay(true); s.pipe(s); });
srv.listen(0, '127.0.0.1', () => console.log(`listening on ${srv.address().port}`));
