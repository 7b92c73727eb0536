#!/bin/bash
# onnxc's test command.
#
#   bash utils/test.sh           build, lit, round trip and idempotence of
#                                every shipped .fxir, lit under ASan/UBSan, fuzz smoke,
#                                ONNX conformance (also at -O2 and converted
#                                to opsets 13 and 26), the runtime's kernels on
#                                ONNX's node tests and its contrib-op kernels
#                                against ONNX Runtime, decompositions against
#                                PyTorch, the Python API (torch 1.13 and 2.x),
#                                the exporter's contract, the modern zoo
#                                (torch 2.x), generation with a KV cache
#                                against generate(), decoders and
#                                encoder-decoders (torch 2.x), end-to-end tests, the
#                                torchvision/torchaudio zoo sweep (torch 1.13),
#                                the manylinux wheel (built, repaired, installed)
#   bash utils/test.sh --quick   build, lit, round trip, kernels, decompositions, the
#                                Python API, the wheel, the contract and end-to-end only
#   bash utils/test.sh --fuzz-long[=SECONDS]
#                                only the fuzz targets, each for SECONDS
#                                (default 600), under ASan and UBSan
#
# Each step is announced; the first step that fails stops the run with a
# message. The last line is `N passed, N failed, N skipped`, summed over the
# lit runs, the round trip, the conformance and kernel suites, the Python API and contract
# tests, the wheel's, the generation test, the end-to-end tests and the zoo sweep.
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

PY=/usr/bin/python3
# The torch 2.x lane's Python: the virtual environment utils/install-deps.sh
# makes (pins in utils/venv-requirements.txt).
VENV="${ONNXC_VENV:-$HOME/.cache/onnxc/venv-torch2}"
VPY="$VENV/bin/python"
LIT=(/usr/bin/python3 /usr/lib/llvm-19/build/utils/lit/lit.py)
JOBS=2
QUICK=0
FUZZ_LONG=0
# The smoke runs of step 4: target, seed corpus, seconds (165 in all).
FUZZ_TARGETS=(
  "fuzz-parser test/fuzz/corpus 45"
  "fuzz-import test/fuzz/import_corpus 35"
  "fuzz-safetensors test/fuzz/safetensors_corpus 30"
  "fuzz-external test/fuzz/external_corpus 25"
  "fuzz-decomp test/fuzz/decomp_corpus 30"
)

for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    --fuzz-long) FUZZ_LONG=600 ;;
    --fuzz-long=*) FUZZ_LONG="${arg#--fuzz-long=}"
      [[ "$FUZZ_LONG" =~ ^[1-9][0-9]*$ ]] || { echo "test.sh: --fuzz-long wants a number of seconds" >&2; exit 2; } ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $arg (try --help)" >&2; exit 2 ;;
  esac
done

LOGDIR="$(mktemp -d "${TMPDIR:-/tmp}/onnxc-test.XXXXXX")"
trap 'rm -rf "$LOGDIR"' EXIT

TOTAL_PASS=0
TOTAL_FAIL=0
TOTAL_SKIP=0
SUMMARY=()
START=$SECONDS
STEP_START=$SECONDS

header() {
  STEP_START=$SECONDS
  printf '\n======== %s ========\n' "$*"
}

# note STEP RESULT: one line of the final summary, with the step's time.
note() {
  SUMMARY+=("$(printf '%-22s %-44s %5ds' "$1" "$2" $((SECONDS - STEP_START)))")
  STEP_START=$SECONDS
}

count() {
  TOTAL_PASS=$((TOTAL_PASS + $1))
  TOTAL_FAIL=$((TOTAL_FAIL + $2))
  TOTAL_SKIP=$((TOTAL_SKIP + $3))
}

finish() {
  printf '\n======== summary ========\n'
  local line
  for line in "${SUMMARY[@]}"; do echo "$line"; done
  printf 'total time %ds\n' $((SECONDS - START))
  echo "$TOTAL_PASS passed, $TOTAL_FAIL failed, $TOTAL_SKIP skipped"
}

# fail STEP MESSAGE: stop here. A step that counts no tests of its own (a
# build, the fuzzer) counts as one failure so the closing line says so.
fail() {
  local step="$1" counted="${3:-0}"
  echo "test.sh: FAILED at step '$step': $2" >&2
  [ "$counted" = 1 ] || count 0 1 0
  note "$step" "FAILED: $2"
  finish
  exit 1
}

# configure DIR ARGS...: cmake configure; its output is shown on failure.
configure() {
  local dir="$1"; shift
  echo "+ cmake -S . -B $dir $*"
  cmake -S . -B "$dir" "$@" > "$LOGDIR/configure.log" 2>&1 || {
    cat "$LOGDIR/configure.log"; return 1; }
}

# compile DIR [TARGET]: cmake --build; on failure shows the errors first.
compile() {
  local dir="$1" target="${2:-}"
  echo "+ cmake --build $dir -j$JOBS${target:+ --target $target}"
  if cmake --build "$dir" -j"$JOBS" ${target:+--target "$target"} > "$LOGDIR/build.log" 2>&1; then
    tail -n 2 "$LOGDIR/build.log"
    return 0
  fi
  grep -E -A3 'error|Error' "$LOGDIR/build.log" | head -n 60
  echo "---- last lines of the build log ----"
  tail -n 20 "$LOGDIR/build.log"
  return 1
}

build() {
  configure "$@" && compile "$1"
}

# lit_counts LOG: "passed failed skipped" from lit's closing table
# (lines such as "  Passed: 12 (92.31%)").
lit_counts() {
  sed -nE 's/^ *(Passed|Expectedly Failed|Failed|Unresolved|Unexpectedly Passed|Timed Out|Unsupported|Skipped|Excluded) *: *([0-9]+).*/\1:\2/p' "$1" |
    awk -F: '
      $1 == "Passed" || $1 == "Expectedly Failed" { p += $2 }
      $1 == "Failed" || $1 == "Unresolved" || $1 == "Unexpectedly Passed" || $1 == "Timed Out" { f += $2 }
      $1 == "Unsupported" || $1 == "Skipped" || $1 == "Excluded" { s += $2 }
      END { printf "%d %d %d\n", p, f, s }'
}

# run_lit NAME ONNXC [ENV...]: run the lit suite against one binary.
run_lit() {
  local name="$1" bin="$2"; shift 2
  local log="$LOGDIR/$name.log"
  env ONNXC_BUILD="$REPO/$bin" "$@" "${LIT[@]}" -sv -j"$JOBS" test/lit 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  read -r p f s < <(lit_counts "$log")
  count "$p" "$f" "$s"
  if [ "$rc" -ne 0 ]; then
    [ "$f" -gt 0 ] || { count 0 1 0; }
    fail "$name" "lit exited $rc ($p passed, $f failed)" 1
  fi
  # A suite that ran nothing must not look green.
  [ "$p" -gt 0 ] || fail "$name" "lit ran no test"
  note "$name" "$p passed, $f failed, $s skipped"
}

# closing_counts LOG: "passed failed skipped" from a `N passed, N failed[, N skipped]` line.
closing_counts() {
  grep -E '^([A-Za-z]+: )?[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$1" | tail -n 1 |
    sed -E 's/^[A-Za-z]+: //; s/ passed, / /; s/ failed(, )?/ /; s/ skipped//' |
    awk '{ printf "%d %d %d\n", $1, $2, ($3 == "" ? 0 : $3); found = 1 }
         END { if (!found) print "0 0 0" }'
}

# fuzz TARGET SEEDS SECONDS: builds build-fuzz/TARGET, runs it over a copy
# of SEEDS, stops the run on a crash, and sets FUZZ_RUNS to its executions.
fuzz() {
  local target=$1 seeds=$2 seconds=$3 rc
  local corpus="$LOGDIR/corpus-$target" log="$LOGDIR/$target.log"
  compile build-fuzz "$target" || fail fuzz "building $target with clang failed"
  mkdir -p "$corpus"
  cp -r "$seeds/." "$corpus/"
  echo "+ build-fuzz/$target -max_total_time=$seconds (corpus: $(ls "$corpus" | wc -l) files, copied)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    build-fuzz/"$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$REPO/build-fuzz/" "$corpus" > "$log" 2>&1
  rc=$?
  tail -n 25 "$log"
  [ "$rc" -eq 0 ] || fail fuzz "$target found a crash (exit $rc); the input is in build-fuzz/ (crash-*, timeout-*, leak-*)"
  FUZZ_RUNS=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo '?')
}

# fuzz_all [SECONDS]: configures build-fuzz/ and runs every target in
# FUZZ_TARGETS, each for its own time or for SECONDS.
fuzz_all() {
  local entry target seeds seconds runs=()
  CC=clang configure build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXC_FUZZ=ON \
    "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined" ||
    fail fuzz "cmake configure of build-fuzz/ failed"
  for entry in "${FUZZ_TARGETS[@]}"; do
    read -r target seeds seconds <<< "$entry"
    fuzz "$target" "$seeds" "${1:-$seconds}"
    runs+=("${target#fuzz-} $FUZZ_RUNS")
  done
  FUZZ_SUMMARY="$(IFS=,; echo "${runs[*]}")"
}

if [ "$FUZZ_LONG" != 0 ]; then
  command -v clang >/dev/null 2>&1 || { echo "test.sh: --fuzz-long needs clang" >&2; exit 2; }
  header "fuzz: every target for ${FUZZ_LONG}s"
  fuzz_all "$FUZZ_LONG"
  note fuzz "ok: runs: $FUZZ_SUMMARY"
  count 1 0 0
  finish
  exit 0
fi

# counted STEP HINT CMD...: runs a suite whose last line is
# `N passed, N failed, N skipped`, adds its counts, and stops the run if it
# failed (HINT says where to look).
counted() {
  local step=$1 hint=$2 rc p f s
  shift 2
  "$@" 2>&1 | tee "$LOGDIR/$step.log"
  rc=${PIPESTATUS[0]}
  read -r p f s < <(closing_counts "$LOGDIR/$step.log")
  count "${p:-0}" "${f:-0}" "${s:-0}"
  if [ "$rc" -ne 0 ]; then
    [ "${f:-0}" -gt 0 ] || count 0 1 0
    fail "$step" "exit $rc; $hint" 1
  fi
  note "$step" "${p:-0} passed, ${f:-0} failed, ${s:-0} skipped"
}

# ---- 1. build ----
header "build: build/ (RelWithDebInfo)"
build build -DCMAKE_BUILD_TYPE=RelWithDebInfo || fail build "cmake configure or build of build/ failed"
[ -x build/onnxc ] || fail build "build/onnxc was not produced"
note build ok

# ---- 2. lit ----
header "lit: test/lit against build/onnxc"
run_lit lit build/onnxc

# ---- 2b. round trip and idempotence ----
header "roundtrip: every shipped .fxir printed, read back, and each -O pipeline on its own output (test/roundtrip/run_roundtrip.py)"
counted roundtrip "rerun with -v -k PATH to see each check" \
  "$PY" test/roundtrip/run_roundtrip.py --onnxc build/onnxc -j"$JOBS"

# ---- 3. lit under ASan and UBSan ----
if [ "$QUICK" = 1 ]; then
  note "lit (asan)" "skipped: --quick"
else
  header "build: build-asan/ (-DONNXC_SANITIZE=ON)"
  build build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DONNXC_SANITIZE=ON ||
    fail "build (asan)" "cmake configure or build of build-asan/ failed"
  note "build (asan)" ok
  header "lit: test/lit against build-asan/onnxc"
  run_lit "lit (asan)" build-asan/onnxc ONNXC_SANITIZE=1 \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi

# Benchmarks (build/onnxc-bench) are separate and not run here.

# ---- 4. fuzz smoke ----
header "fuzz: every reader's target, 165s in all"
if [ "$QUICK" = 1 ]; then
  echo "skipped: --quick"; note fuzz "skipped: --quick"
elif ! command -v clang >/dev/null 2>&1; then
  echo "skipped: clang is not installed"; note fuzz "skipped: no clang"
else
  # The ONNX importer target also runs the verifier, printer and writer
  # behind it; its seeds are small models from the ONNX node tests.
  fuzz_all
  note fuzz "ok: runs: $FUZZ_SUMMARY"
fi

# ---- 5. ONNX conformance ----
header "conformance: ONNX node tests through onnxc"
if [ "$QUICK" = 1 ]; then
  echo "skipped: --quick"; note conformance "skipped: --quick"
else
  counted conformance "failures listed in build/conformance-failures.txt" \
    "$PY" test/conformance/run_conformance.py --onnxc build/onnxc --text-roundtrip -j"$JOBS" \
    --failures build/conformance-failures.txt --list-skips build/conformance-skips.txt
  # The same models through the optimizing pipeline: passes must not change results.
  counted conformance-O2 "failures listed in build/conformance-O2-failures.txt" \
    "$PY" test/conformance/run_conformance.py --onnxc build/onnxc -O 2 -j"$JOBS" \
    --failures build/conformance-O2-failures.txt
  # Converted to the oldest opset -opset=N takes (13), raised to ONNX
  # Runtime's newest (26), and raised then lowered again (the newer forms'
  # way down).
  counted conformance-opset13 "failures listed in build/conformance-opset13-failures.txt" \
    "$PY" test/conformance/run_conformance.py --onnxc build/onnxc --opset=13 -k 'node/*' -j"$JOBS" \
    --failures build/conformance-opset13-failures.txt
  counted conformance-opset26 "failures listed in build/conformance-opset26-failures.txt" \
    "$PY" test/conformance/run_conformance.py --onnxc build/onnxc --opset=26 -k 'node/*' -j"$JOBS" \
    --failures build/conformance-opset26-failures.txt
  counted conformance-opset26-13 "failures listed in build/conformance-opset26-13-failures.txt" \
    "$PY" test/conformance/run_conformance.py --onnxc build/onnxc --opset=26,13 -k 'node/*' -j"$JOBS" \
    --failures build/conformance-opset26-13-failures.txt
  # ONNX's own tests of ops newer than Debian's data (the onnx package's test
  # cases), converted down to 18 through decomps/onnx_newer.fxir.
  [ -x "$VPY" ] || fail conformance-newer "no $VPY: run bash utils/install-deps.sh"
  "$VPY" test/conformance/gen_node_tests.py "$LOGDIR/newer" '^test_(rotary_embedding|attention_4d)' |
    tail -n 1
  counted conformance-newer-18 "failures listed in build/conformance-newer-18-failures.txt" \
    "$PY" test/conformance/run_conformance.py --data "$LOGDIR/newer" --opset=18 -O 2 -k 'node/*' \
    -j"$JOBS" --failures build/conformance-newer-18-failures.txt
fi

# ---- 5b. the runtime's kernels on the same tests ----
header "kernels: ONNX node tests through onnxc run"
# A few seconds, and no ONNX Runtime needed: it runs under --quick too.
counted kernels "failures listed in build/kernels-failures.txt" \
  "$PY" test/conformance/run_kernels.py --onnxc build/onnxc -j"$JOBS" \
  --failures build/kernels-failures.txt --list-skips build/kernels-skips.txt

# ---- 5c. the contrib-op kernels (com.microsoft) against ONNX Runtime ----
header "kernels (ort): test/conformance/run_ms_kernels.py"
[ -x "$VPY" ] || fail "kernels (ort)" "no $VPY: run bash utils/install-deps.sh"
counted "kernels (ort)" "rerun with $VPY test/conformance/run_ms_kernels.py -v -k NAME" \
  "$VPY" test/conformance/run_ms_kernels.py --onnxc build/onnxc

# ---- 6. decompositions against PyTorch ----
header "decompositions: test/decomp/check_decomps.py"
counted decompositions "rerun with -v -k NAME for the failing program" \
  "$PY" test/decomp/check_decomps.py --onnxc "$REPO/build/onnxc"

# Attention and _safe_softmax against torch 2.x's own ops (torch 1.13 has
# neither: above, they meet a NumPy reference), fully masked rows included;
# unsorted unique (torch 1.13 leaves its values unordered).
[ -x "$VPY" ] || fail "decompositions (torch 2.x)" "no $VPY: run bash utils/install-deps.sh"
counted "decompositions (torch 2.x)" "rerun with $VPY test/decomp/check_decomps.py -v -k NAME" \
  "$VPY" test/decomp/check_decomps.py --onnxc "$REPO/build/onnxc" -k sdpa -k _safe_softmax \
  -k _unique2-unsorted

# ---- 6b. the Python API ----
header "python: test/python/test_api.py"
counted python "rerun with -v -k NAME for the failing test" \
  env ONNXC="$REPO/build/onnxc" "$PY" test/python/test_api.py

# ---- 6b'. the Python API on torch 2.x (torch.export) ----
header "python (torch 2.x): test/python/test_api.py in $VENV"
[ -x "$VPY" ] || fail "python (torch 2.x)" "no $VPY: run bash utils/install-deps.sh"
counted "python (torch 2.x)" "rerun with $VPY test/python/test_api.py -v -k NAME" \
  env ONNXC="$REPO/build/onnxc" "$VPY" test/python/test_api.py

# ---- 6b''. torch.onnx.export's behaviours around the trace, on both torches ----
header "python: test/python/test_compat.py (torch 1.13, then torch 2.x)"
counted "python compat" "rerun with -v -k NAME for the failing test" \
  env ONNXC="$REPO/build/onnxc" "$PY" test/python/test_compat.py
counted "python compat (torch 2.x)" "rerun with $VPY test/python/test_compat.py -v -k NAME" \
  env ONNXC="$REPO/build/onnxc" "$VPY" test/python/test_compat.py

# ---- 6b''''. the manylinux wheel ----
header "wheel: utils/build-wheel.sh, then test/wheel/test_wheel.py (auditwheel, ldd, pip into a fresh venv)"
[ -x "$VPY" ] || fail wheel "no $VPY: run bash utils/install-deps.sh"
counted wheel "rerun with $VPY test/wheel/test_wheel.py -v" \
  "$VPY" test/wheel/test_wheel.py

# ---- 6b'''. quantized models on torch 2.x ----
header "python (torch 2.x): test/python/test_quantized.py (quantized resnet18, mobilenet_v2) in $VENV"
counted "quantized (torch 2.x)" "rerun with $VPY test/python/test_quantized.py -v -k NAME" \
  env ONNXC="$REPO/build/onnxc" "$VPY" test/python/test_quantized.py
header "python (torch 2.x): test/python/test_weight_quant.py (-quantize=int4|int8 on a small Llama, int8-dynamic on a small BERT) in $VENV"
counted "weight quantization (torch 2.x)" "rerun with $VPY test/python/test_weight_quant.py -v -k NAME" \
  env ONNXC="$REPO/build/onnxc" "$VPY" test/python/test_weight_quant.py

# ---- 6c. the exporter's contract ----
header "contract: test/contract/run_contract.py"
counted contract "rerun with -v -k NAME for the failing test" \
  env ONNXC="$REPO/build/onnxc" "$PY" test/contract/run_contract.py

# ---- 6d. the modern zoo on torch 2.x ----
header "modern zoo (torch 2.x): transformers, timm and torchvision through onnxc.export (test/zoo/run_modern_zoo.py)"
if [ "$QUICK" = 1 ]; then
  echo "skipped: --quick"; note "modern zoo" "skipped: --quick"
else
  [ -x "$VPY" ] || fail "modern zoo" "no $VPY: run bash utils/install-deps.sh"
  counted "modern zoo" "rerun with $VPY test/zoo/run_modern_zoo.py -k MODEL; the table is in build/modern_zoo.md" \
    "$VPY" test/zoo/run_modern_zoo.py --onnxc "$REPO/build/onnxc" -j"$JOBS" --markdown build/modern_zoo.md
fi

# ---- 6e. generation with a key/value cache on torch 2.x ----
header "generation (torch 2.x): decoders and encoder-decoders with past in ONNX Runtime against generate() (test/generation/)"
if [ "$QUICK" = 1 ]; then
  echo "skipped: --quick"; note generation "skipped: --quick"
else
  [ -x "$VPY" ] || fail generation "no $VPY: run bash utils/install-deps.sh"
  counted generation "rerun with $VPY test/generation/run_generation.py -k MODEL" \
    env ONNXC="$REPO/build/onnxc" "$VPY" test/generation/run_generation.py
  counted "generation seq2seq" "rerun with $VPY test/generation/run_seq2seq.py -k MODEL/CASE" \
    "$VPY" test/generation/run_seq2seq.py --onnxc "$REPO/build/onnxc"
fi

# ---- 7. end-to-end ----
header "e2e: test/e2e/run_e2e.py"
counted e2e "rerun with --keep -k MODEL to keep the files" \
  env ONNXC_BUILD="$REPO/build/onnxc" "$PY" test/e2e/run_e2e.py

# ---- 8. the zoo sweep ----
header "zoo: torchvision and torchaudio through onnxc -O2 (test/zoo/run_zoo.py)"
if [ "$QUICK" = 1 ]; then
  echo "skipped: --quick"; note zoo "skipped: --quick"
else
  counted zoo "rerun with -k MODEL; the table is in build/zoo.md" \
    "$PY" test/zoo/run_zoo.py --onnxc "$REPO/build/onnxc" -j"$JOBS" --markdown build/zoo.md
fi

finish
[ "$TOTAL_FAIL" -eq 0 ]
