// Node's net echo server, the other peer of perf/echo/echo-compare.sh.
//   node echo_server.js [PORT]     prints "listening on PORT" on stdout
'use strict';
const net = require('net');
const server = net.createServer({ noDelay: true }, (socket) => {
  socket.on('data', (chunk) => socket.write(chunk));
  socket.on('error', () => {});
});
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});
process.on('SIGTERM', () => process.exit(0));
