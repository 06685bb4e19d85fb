// lines.js: counts the lines of a file the way Node programs do, with
// readline over fs.createReadStream, for lines-compare.sh.
//
//   node perf/lines.js FILE
'use strict';
const fs = require('fs');
const readline = require('readline');

async function main() {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node lines.js FILE');
    process.exit(2);
  }
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  let n = 0;
  for await (const line of rl) n++;  // eslint-disable-line no-unused-vars
  console.log(n);
}

main().catch((err) => {
  console.error(`lines.js: ${err.message}`);
  process.exit(1);
});
