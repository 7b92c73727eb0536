#!/usr/bin/env node
// Inference latency of ONNX models in ONNX Runtime, as a user runs them:
// the CPU execution provider with its default graph optimizations.
//
//   node bench/bench_ort.js [--runs N] [--warmup N] [--budget SECONDS]
//                           [--inputs SPEC.json] [--outdir DIR] [--json] [--no-optimize]
//                           A.onnx [B.onnx ...]
//
// Feeds random inputs of the declared shapes (symbolic dims set to 1),
// runs each model 3 times to warm up, then N times (default 30) in turn,
// A B, B A, A B, ... (the order reverses every round), and prints each
// model's median and min latency in ms, and each model's median against
// the first one's.
//
// --inputs SPEC.json feeds every model the same saved tensors instead: a JSON
//     array of {"name", "dtype", "dims", "file"} (utils/ort_run.js's job
//     inputs: raw little-endian row-major data; dtype "float", "int64", ...).
//     Each model takes the inputs it declares, by name.
// --outdir DIR writes each model's outputs of its last timed run to DIR.
// --budget SECONDS caps the timed runs so that they take about that long
//     (estimated from the last warm-up round), but never fewer than 10.
// --sample-ms MS makes each timed run of a fast model a batch of K
//     inferences, K the same for every model and chosen from the last
//     warm-up round so that a round takes about MS; times are per inference
//     (the batch's time / K), so one preemption of the process weighs less.
// --no-optimize runs the models with ONNX Runtime's graph optimizations off
//     (as written; the default is all of them, ONNX Runtime's own default).
// --json prints one JSON object instead of the text lines:
//     {"runs", "warmup", "batch", "models": [{"model", "times": [ms, ...], "median",
//      "min", "outputs": [{"name", "dtype", "dims", "file"}]}]}
//     where times[i] of every model belong to the same round i.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, '..', 'utils', 'node', 'node_modules', 'onnxruntime-node'));

const TYPED = { float32: Float32Array, float64: Float64Array, int64: BigInt64Array, int32: Int32Array,
  bool: Uint8Array, uint8: Uint8Array, int8: Int8Array, float16: Uint16Array };

function feeds(session) {
  const out = {};
  session.inputNames.forEach((name, i) => {
    const meta = session.inputMetadata ? session.inputMetadata[i] : null;
    const type = meta && meta.type ? meta.type : 'float32';
    const dims = (meta && meta.shape ? meta.shape : []).map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const n = dims.reduce((a, b) => a * b, 1);
    const Arr = TYPED[type] || Float32Array;
    const data = new Arr(n);
    for (let k = 0; k < n; k++)
      data[k] = Arr === BigInt64Array ? 0n : Arr === Uint8Array ? 0 : Math.random();
    out[name] = new ort.Tensor(type, data, dims);
  });
  return out;
}

// ONNX element type names (as in utils/ort_run.js's jobs) -> tensor types.
const ORT_TYPE = { float: 'float32', double: 'float64', float16: 'float16', int8: 'int8',
  int16: 'int16', int32: 'int32', int64: 'int64', uint8: 'uint8', uint16: 'uint16',
  uint32: 'uint32', uint64: 'uint64', bool: 'bool' };
const ARRAY_OF = { float32: Float32Array, float64: Float64Array, float16: Uint16Array,
  int8: Int8Array, int16: Int16Array, int32: Int32Array, int64: BigInt64Array,
  uint8: Uint8Array, uint16: Uint16Array, uint32: Uint32Array, uint64: BigUint64Array,
  bool: Uint8Array };
const ONNX_TYPE = {};
for (const k of Object.keys(ORT_TYPE)) ONNX_TYPE[ORT_TYPE[k]] = k;

function savedTensors(specFile) {
  const specs = JSON.parse(fs.readFileSync(specFile, 'utf8'));
  const base = path.dirname(specFile);
  const out = {};
  for (const sp of specs) {
    const type = ORT_TYPE[sp.dtype] || sp.dtype;
    const Ctor = ARRAY_OF[type];
    if (!Ctor) throw new Error(`input ${sp.name}: unsupported dtype ${sp.dtype}`);
    const bytes = sp.file ? fs.readFileSync(path.resolve(base, sp.file)) : Buffer.alloc(0);
    const ab = new ArrayBuffer(bytes.length);     // aligned copy
    new Uint8Array(ab).set(bytes);
    const data = new Ctor(ab);
    const n = (sp.dims || []).reduce((a, b) => a * b, 1);
    if (data.length !== n) throw new Error(`input ${sp.name}: ${data.length} elements for dims [${sp.dims}]`);
    out[sp.name] = new ort.Tensor(type, data, sp.dims || []);
  }
  return out;
}

function savedFeeds(session, saved, model) {
  const out = {};
  for (const name of session.inputNames) {
    if (!(name in saved)) throw new Error(`${model}: input ${name} is not in the --inputs file`);
    out[name] = saved[name];
  }
  return out;
}

function writeOutputs(res, names, dir, tag) {
  return names.map((name, k) => {
    const t = res[name];
    const v = { name, dtype: ONNX_TYPE[t.type] || t.type, dims: Array.from(t.dims, Number) };
    if (t.type === 'string') { v.strings = Array.from(t.data); return v; }
    const file = path.join(dir, `${tag}_${k}.bin`);
    fs.writeFileSync(file, Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    v.file = file;
    return v;
  });
}

function median(v) { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }

async function main() {
  const args = process.argv.slice(2);
  let runs = 30, warmup = 3, budget = 0, sampleMs = 0, inputs = null, outdir = null, json = false;
  let optimize = true;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--runs') runs = parseInt(args[++i], 10);
    else if (args[i] === '--warmup') warmup = parseInt(args[++i], 10);
    else if (args[i] === '--budget') budget = parseFloat(args[++i]);
    else if (args[i] === '--sample-ms') sampleMs = parseFloat(args[++i]);
    else if (args[i] === '--inputs') inputs = args[++i];
    else if (args[i] === '--outdir') outdir = args[++i];
    else if (args[i] === '--json') json = true;
    else if (args[i] === '--no-optimize') optimize = false;
    else models.push(args[i]);
  }
  if (!models.length || !(runs > 0) || !(warmup >= 1)) {
    console.error('usage: node bench/bench_ort.js [--runs N] [--warmup N] [--budget SECONDS] ' +
      '[--sample-ms MS] [--inputs SPEC.json] [--outdir DIR] [--json] [--no-optimize] A.onnx [B.onnx ...]');
    process.exit(2);
  }
  const saved = inputs ? savedTensors(inputs) : null;
  const sessions = [];
  for (const m of models) {
    const s = await ort.InferenceSession.create(m, { intraOpNumThreads: 1, interOpNumThreads: 1,
      graphOptimizationLevel: optimize ? 'all' : 'disabled' });
    sessions.push({ model: m, s, feeds: saved ? savedFeeds(s, saved, m) : feeds(s), times: [] });
  }
  let round = 0;
  for (let k = 0; k < warmup; k++) {
    round = 0;
    for (const x of sessions) {
      const t0 = process.hrtime.bigint();
      await x.s.run(x.feeds);
      round += Number(process.hrtime.bigint() - t0) / 1e6;
    }
  }
  const batch = sampleMs > 0 && round > 0 ? Math.max(1, Math.ceil(sampleMs / round)) : 1;
  if (batch > 1)      // warm up as many inferences as a timed run does
    for (const x of sessions)
      for (let k = 0; k < batch; k++) await x.s.run(x.feeds);
  if (budget > 0 && round > 0)
    runs = Math.max(Math.min(runs, 10), Math.min(runs, Math.floor(budget * 1000 / (round * batch))));
  let last = null;
  // Odd rounds run the models in reverse order (A B, B A, A B, ...): no
  // model always runs first, or always right after another one.
  for (let r = 0; r < runs; r++) {
    last = new Array(sessions.length);
    const order = sessions.map((_, i) => (r % 2 ? sessions.length - 1 - i : i));
    for (const i of order) {
      const x = sessions[i];
      let res;
      const t0 = process.hrtime.bigint();
      for (let k = 0; k < batch; k++) res = await x.s.run(x.feeds);
      x.times.push(Number(process.hrtime.bigint() - t0) / 1e6 / batch);
      last[i] = res;
    }
  }
  if (outdir) fs.mkdirSync(outdir, { recursive: true });
  if (json) {
    const out = { runs, warmup, batch, models: sessions.map((x, i) => ({
      model: x.model, times: x.times, median: median(x.times), min: Math.min(...x.times),
      outputs: outdir ? writeOutputs(last[i], x.s.outputNames, outdir, `m${i}`) : [] })) };
    console.log(JSON.stringify(out));
    return;
  }
  if (outdir) sessions.forEach((x, i) => writeOutputs(last[i], x.s.outputNames, outdir, `m${i}`));
  const base = median(sessions[0].times);
  if (batch > 1) console.log(`(${batch} inferences a timed run)`);
  for (const x of sessions)
    console.log(`${path.basename(x.model)}\tmedian ${median(x.times).toFixed(3)} ms\tmin ${Math.min(...x.times).toFixed(3)} ms\tx${(median(x.times) / base).toFixed(3)}`);
}

main().catch((e) => { console.error(e.message); process.exit(1); });
