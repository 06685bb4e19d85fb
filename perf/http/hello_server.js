// The Node peer for http-compare.sh: http.createServer's "hello world"
// (keep-alive is Node's default), the same response bytes as sluice's.
//
//   node hello_server.js [PORT]     prints "listening on PORT" on stdout
'use strict';
const http = require('http');
const server = http.createServer((req, res) => {
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '12' });
  res.end('hello world\n');
});
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
