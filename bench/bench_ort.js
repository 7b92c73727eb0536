#!/usr/bin/env node
// Inference latency of ONNX models in ONNX Runtime, as a user runs them:
// the CPU execution provider with its default graph optimizations.
//
//   node bench/bench_ort.js [--runs N] A.onnx [B.onnx ...]
//
// Feeds random inputs of the declared shapes (symbolic dims set to 1),
// runs each model 3 times to warm up, then N times (default 30) in turn,
// A B A B ..., and prints each model's median and min latency in ms, and
// each model's median against the first one's.
'use strict';
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

function median(v) { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; }

async function main() {
  const args = process.argv.slice(2);
  let runs = 30;
  const models = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--runs') runs = parseInt(args[++i], 10);
    else models.push(args[i]);
  }
  if (!models.length || !(runs > 0)) {
    console.error('usage: node bench/bench_ort.js [--runs N] A.onnx [B.onnx ...]');
    process.exit(2);
  }
  const sessions = [];
  for (const m of models) {
    const s = await ort.InferenceSession.create(m, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    sessions.push({ model: m, s, feeds: feeds(s), times: [] });
  }
  for (const x of sessions)
    for (let k = 0; k < 3; k++) await x.s.run(x.feeds);
  for (let r = 0; r < runs; r++)
    for (const x of sessions) {
      const t0 = process.hrtime.bigint();
      await x.s.run(x.feeds);
      x.times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  const base = median(sessions[0].times);
  for (const x of sessions)
    console.log(`${path.basename(x.model)}\tmedian ${median(x.times).toFixed(3)} ms\tmin ${Math.min(...x.times).toFixed(3)} ms\tx${(median(x.times) / base).toFixed(3)}`);
}

main().catch((e) => { console.error(e.message); process.exit(1); });
