#!/usr/bin/env node
// Runs ONNX models in ONNX Runtime (the onnxruntime-node package installed
// under utils/node by utils/install-deps.sh).
//
// Server mode (no arguments, or --server): one JSON job a line on stdin, one
// JSON answer a line on stdout, in order. A job:
//   {"model": "m.onnx",
//    "inputs": [{"name": "x", "dtype": "float", "dims": [2, 3], "file": "x.bin"},
//               {"name": "s", "dtype": "string", "dims": [2], "strings": ["a", "b"]}],
//    "outdir": "/tmp/dir"}
// Tensor files hold raw little-endian data, row-major. The answer:
//   {"ok": true, "outputs": [{"name", "dtype", "dims", "file"} | {..., "strings": [...]}]}
//   {"ok": false, "error": "message"}
// A job may also say "outputs": ["name", ...] to fetch only those outputs.
//
// CLI mode: node utils/ort_run.js model.onnx [--random] [--seed N] [--show N] [--digits N]
// feeds zero-filled (or random) inputs of the declared shapes, symbolic
// dimensions set to 1, and prints each output's name, type, shape and first
// N values (floats to --digits significant digits, default 6).
//
// The CPU execution provider runs with graph optimizations disabled, so the
// model runs as written.
'use strict';

const fs = require('fs');
const path = require('path');
const readline = require('readline');

function loadOrt() {
  const here = path.join(__dirname, 'node', 'node_modules', 'onnxruntime-node');
  try {
    return require(here);
  } catch (e) {
    try {
      return require('onnxruntime-node');
    } catch (e2) {
      process.stderr.write('ort_run.js: cannot load onnxruntime-node (' + e.message +
        '); run utils/install-deps.sh\n');
      process.exit(2);
    }
  }
}

const ort = loadOrt();
// Errors come back in the answers; keep the runtime's own log quiet.
ort.env.logLevel = 'fatal';

// ONNX element type names <-> onnxruntime-node tensor types and element sizes.
const ONNX_TO_ORT = {
  float: 'float32', double: 'float64', float16: 'float16',
  int8: 'int8', int16: 'int16', int32: 'int32', int64: 'int64',
  uint8: 'uint8', uint16: 'uint16', uint32: 'uint32', uint64: 'uint64',
  bool: 'bool', string: 'string',
};
const ORT_TO_ONNX = {};
for (const k of Object.keys(ONNX_TO_ORT)) ORT_TO_ONNX[ONNX_TO_ORT[k]] = k;
// Names people also write (numpy style), accepted on input.
const ALIASES = {
  float32: 'float', float64: 'double', f32: 'float', f64: 'double', f16: 'float16',
};

const ARRAY_OF = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array,
  int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  bool: Uint8Array,
};

function ortType(dtype) {
  const d = ALIASES[dtype] || dtype;
  const t = ONNX_TO_ORT[d];
  if (!t) throw new Error('unsupported dtype "' + dtype + '"');
  return t;
}

function numel(dims) {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}

// Copy the bytes into a fresh, aligned ArrayBuffer: Buffers from readFileSync
// may sit at any offset of a shared pool.
function typedFromBytes(type, bytes) {
  const Ctor = ARRAY_OF[type];
  const size = Ctor.BYTES_PER_ELEMENT;
  if (bytes.length % size !== 0) throw new Error('file size ' + bytes.length + ' is not a multiple of ' + size);
  const ab = new ArrayBuffer(bytes.length);
  new Uint8Array(ab).set(bytes);
  return new Ctor(ab);
}

function makeTensor(inp) {
  if (typeof inp.name !== 'string') throw new Error('input without a name');
  const type = ortType(inp.dtype);
  const dims = inp.dims || [];
  const n = numel(dims);
  if (type === 'string') {
    const strs = inp.strings || [];
    if (strs.length !== n) throw new Error('input ' + inp.name + ': ' + strs.length + ' strings for ' + n + ' elements');
    return new ort.Tensor('string', strs, dims);
  }
  const bytes = inp.file ? fs.readFileSync(inp.file) : Buffer.alloc(0);
  let data = typedFromBytes(type, bytes);
  if (data.length !== n) throw new Error('input ' + inp.name + ': ' + data.length + ' elements for dims [' + dims + ']');
  if (type === 'bool') {
    // The bool tensor wants one byte of 0 or 1 an element.
    data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  }
  return new ort.Tensor(type, data, dims);
}

function safeName(s, i) {
  return String(i) + '_' + s.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 60) + '.bin';
}

function describeOutput(name, t, outdir, i) {
  const v = { name: name };
  if (!t || typeof t.type !== 'string' || !t.dims) {
    throw new Error('output ' + name + ' is not a tensor');
  }
  v.dtype = ORT_TO_ONNX[t.type] || t.type;
  v.dims = Array.from(t.dims, Number);
  if (t.type === 'string') {
    v.strings = Array.from(t.data);
    return v;
  }
  const d = t.data;
  const file = path.join(outdir, safeName(name, i));
  fs.writeFileSync(file, Buffer.from(d.buffer, d.byteOffset, d.byteLength));
  v.file = file;
  return v;
}

const SESSION_OPTIONS = {
  executionProviders: ['cpu'],
  graphOptimizationLevel: 'disabled',
  logSeverityLevel: 3,
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
};

const RUN_OPTIONS = { logSeverityLevel: 4 };

// The last few sessions stay open: a test usually runs one model on
// several data sets in a row.
const cache = new Map();
const CACHE_MAX = 4;

async function getSession(model) {
  const st = fs.statSync(model);
  const key = model + '\0' + st.mtimeMs + '\0' + st.size;
  if (cache.has(key)) {
    const s = cache.get(key);
    cache.delete(key);
    cache.set(key, s);
    return s;
  }
  const s = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  cache.set(key, s);
  while (cache.size > CACHE_MAX) {
    const oldest = cache.keys().next().value;
    const old = cache.get(oldest);
    cache.delete(oldest);
    try { await old.release(); } catch (e) { /* already gone */ }
  }
  return s;
}

function dropSession(model) {
  for (const k of Array.from(cache.keys())) {
    if (k.startsWith(model + '\0')) cache.delete(k);
  }
}

async function runJob(job) {
  if (!job || typeof job.model !== 'string') throw new Error('job without "model"');
  const outdir = job.outdir || fs.mkdtempSync(path.join(require('os').tmpdir(), 'ort-'));
  fs.mkdirSync(outdir, { recursive: true });
  const feeds = {};
  for (const inp of job.inputs || []) feeds[inp.name] = makeTensor(inp);
  let session;
  try {
    session = await getSession(job.model);
  } catch (e) {
    throw new Error('load: ' + e.message);
  }
  const names = job.outputs && job.outputs.length ? job.outputs : session.outputNames;
  let res;
  try {
    res = await session.run(feeds, names, RUN_OPTIONS);
  } catch (e) {
    dropSession(job.model);
    throw new Error('run: ' + e.message);
  }
  const outputs = names.map((n, i) => describeOutput(n, res[n], outdir, i));
  for (const n of names) {
    if (res[n] && typeof res[n].dispose === 'function') res[n].dispose();
  }
  return { ok: true, outputs: outputs };
}

function oneLine(msg) {
  return String(msg).replace(/\s+/g, ' ').trim();
}

function serve() {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  let chain = Promise.resolve();
  rl.on('line', (line) => {
    if (!line.trim()) return;
    chain = chain.then(async () => {
      let answer;
      try {
        answer = await runJob(JSON.parse(line));
      } catch (e) {
        answer = { ok: false, error: oneLine(e && e.message ? e.message : e) };
      }
      process.stdout.write(JSON.stringify(answer) + '\n');
    });
  });
  rl.on('close', () => { chain.then(() => process.exit(0)); });
}

// ---- CLI mode ----

function usage() {
  process.stderr.write('usage: node utils/ort_run.js [--server]\n' +
    '       node utils/ort_run.js MODEL.onnx [--random] [--seed N] [--show N] [--digits N]\n');
  process.exit(2);
}

// A small deterministic generator (xorshift32) so random inputs repeat.
function rng(seed) {
  let x = (seed >>> 0) || 1;
  return () => {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    return x / 4294967296;
  };
}

function fillInput(meta, random, next) {
  const dims = (meta.shape || []).map((d) => (typeof d === 'number' && d >= 0 ? d : 1));
  const type = meta.type;
  const n = numel(dims);
  if (type === 'string') return new ort.Tensor('string', new Array(n).fill(random ? 'a' : ''), dims);
  const Ctor = ARRAY_OF[type];
  if (!Ctor) throw new Error('input ' + meta.name + ' has unsupported type ' + type);
  const a = new Ctor(n);
  if (random) {
    for (let i = 0; i < n; i++) {
      const r = next();
      if (type === 'float32' || type === 'float64') a[i] = r * 2 - 1;
      else if (type === 'float16') a[i] = 0x3c00; // 1.0
      else if (type === 'bool') a[i] = r < 0.5 ? 0 : 1;
      else if (type === 'int64' || type === 'uint64') a[i] = BigInt(Math.floor(r * 10));
      else a[i] = Math.floor(r * 10);
    }
  }
  return new ort.Tensor(type, a, dims);
}

function showValues(t, count, digits) {
  const out = [];
  const d = t.data;
  for (let i = 0; i < d.length && i < count; i++) {
    let v = d[i];
    if (typeof v === 'bigint') v = v.toString();
    else if (typeof v === 'number' && !Number.isInteger(v)) v = Number(v.toPrecision(digits));
    else if (typeof v === 'string') v = JSON.stringify(v);
    out.push(String(v));
  }
  return '[' + out.join(', ') + (d.length > count ? ', ...' : '') + ']';
}

async function cli(args) {
  let model = null;
  let random = false;
  let seed = 1;
  let show = 8;
  let digits = 6;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--random') random = true;
    else if (a === '--seed') seed = Number(args[++i]);
    else if (a === '--show') show = Number(args[++i]);
    else if (a === '--digits') digits = Number(args[++i]);
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('-')) usage();
    else if (model === null) model = a;
    else usage();
  }
  if (model === null) usage();
  const session = await ort.InferenceSession.create(model, SESSION_OPTIONS);
  const next = rng(seed);
  const feeds = {};
  for (const meta of session.inputMetadata) {
    if (!meta.isTensor) throw new Error('input ' + meta.name + ' is not a tensor');
    feeds[meta.name] = fillInput(meta, random, next);
    console.log('input  ' + meta.name + ': ' + (ORT_TO_ONNX[meta.type] || meta.type) +
      '[' + feeds[meta.name].dims.join(',') + ']' + (random ? ' random' : ' zeros'));
  }
  const res = await session.run(feeds, RUN_OPTIONS);
  for (const name of session.outputNames) {
    const t = res[name];
    console.log('output ' + name + ': ' + (ORT_TO_ONNX[t.type] || t.type) +
      '[' + Array.from(t.dims).join(',') + '] ' + showValues(t, show, digits));
  }
}

const argv = process.argv.slice(2);
if (argv.length === 0 || (argv.length === 1 && argv[0] === '--server')) {
  serve();
} else {
  cli(argv).catch((e) => {
    process.stderr.write('ort_run.js: ' + oneLine(e && e.message ? e.message : e) + '\n');
    process.exit(1);
  });
}
