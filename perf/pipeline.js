// node perf/pipeline.js FILE [N]: pipeline_bench.cc's peer. Copies FILE into
// /dev/null through stream.pipeline(createReadStream, N PassThroughs,
// createWriteStream) and prints the bytes copied.
'use strict';
const fs = require('fs');
const { PassThrough, pipeline } = require('stream');

const [file, nArg] = process.argv.slice(2);
const n = nArg === undefined ? 1 : Number(nArg);
const stages = [];
for (let i = 0; i < n; i++) stages.push(new PassThrough());
let bytes = 0;
if (n > 0) stages[n - 1].on('data', (c) => { bytes += c.length; });
pipeline(fs.createReadStream(file), ...stages, fs.createWriteStream('/dev/null'), (err) => {
  if (err) {
    console.error('pipeline.js:', err.message);
    process.exit(1);
  }
  console.log(bytes);
});
