#!/bin/sh
# bench_weights.sh - time and peak memory of writing a model with large weights.
#
#   bench/bench_weights.sh [SIZE [EXTERNAL_SIZE]]
#
# SIZE (default 3G) and EXTERNAL_SIZE (default 500M) take a K, M or G suffix
# (powers of 1024).  For each size the script builds, in a temporary
# directory removed at the end, a .fxir module with four f32 parameters whose
# safetensors file holds SIZE bytes of weights, and compiles it to ONNX under
# /usr/bin/time -v:
#
#   1. SIZE without options: past 2 GB external data switches on by itself;
#   2. EXTERNAL_SIZE with -external-data.
#
# It prints wall time, peak RSS (maximum resident set size) and peak RSS as
# a fraction of the weight bytes.  The weights file is sparse (header written
# by python, the rest by truncate), so making it costs neither time nor RAM.
# Set ONNXC to the binary to measure (default build/onnxc beside this script)
# and TMPDIR to put the temporary files on another disk: each run needs about
# twice SIZE of free space.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
onnxc=${ONNXC:-$here/build/onnxc}
size=${1:-3G}
ext_size=${2:-500M}
python=/usr/bin/python3

[ -x "$onnxc" ] || { echo "bench_weights.sh: no onnxc at $onnxc (build it, or set ONNXC)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_weights.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 2; }

to_bytes() {
	n=${1%[KkMmGg]}
	case $1 in
	*[Kk]) echo $((n * 1024)) ;;
	*[Mm]) echo $((n * 1024 * 1024)) ;;
	*[Gg]) echo $((n * 1024 * 1024 * 1024)) ;;
	*) echo "$n" ;;
	esac
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench_weights.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# make_model DIR BYTES: DIR/m.fxir and DIR/m.safetensors with four f32
# parameters of BYTES/4 bytes each (BYTES rounded down to a multiple of 16).
make_model() {
	dir=$1
	per=$(( $2 / 16 ))              # elements per parameter
	mkdir -p "$dir"
	"$python" - "$dir/m.safetensors" "$per" <<'EOF'
import json, struct, sys
path, per = sys.argv[1], int(sys.argv[2])
hdr, off = {}, 0
for i in range(4):
    hdr["w%d" % i] = {"dtype": "F32", "shape": [per], "data_offsets": [off, off + 4 * per]}
    off += 4 * per
h = json.dumps(hdr, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
print(8 + len(h) + off)
EOF
	{
		echo 'module @Big {'
		echo '  weights "m.safetensors"'
		echo "  graph @forward(%x: f32[$per]) -> (f32[$per]) {"
		for i in 0 1 2 3; do
			echo "    param %w$i: f32[$per] = \"w$i\""
		done
		echo "    %a0 = onnx::Add(%x, %w0) : f32[$per]"
		echo "    %a1 = onnx::Add(%a0, %w1) : f32[$per]"
		echo "    %a2 = onnx::Add(%a1, %w2) : f32[$per]"
		echo "    %a3 = onnx::Add(%a2, %w3) : f32[$per]"
		echo "    return %a3"
		echo '  }'
		echo '}'
	} >"$dir/m.fxir"
}

# run LABEL BYTES [onnxc options...]
run() {
	label=$1 bytes=$2
	shift 2
	dir="$tmp/$label"
	total=$(make_model "$dir" "$bytes" | tail -n 1)
	truncate -s "$total" "$dir/m.safetensors"
	weights=$(( $bytes / 16 * 16 ))
	/usr/bin/time -v -o "$dir/time.txt" "$onnxc" "$dir/m.fxir" -emit=onnx -o "$dir/m.onnx" "$@"
	wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time.txt")
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time.txt")
	model=$(stat -c %s "$dir/m.onnx")
	data=0
	[ -f "$dir/m.onnx.data" ] && data=$(stat -c %s "$dir/m.onnx.data")
	awk -v l="$label" -v w="$weights" -v t="$wall" -v r="$rss" -v m="$model" -v d="$data" -v o="$*" 'BEGIN {
		printf "%-10s weights %8.1f MB  options \"%s\"\n", l, w / 1048576, o
		printf "           wall %s  peak RSS %.1f MB  peak RSS / weights %.3f\n", t, r / 1024, r * 1024 / w
		printf "           model %.1f KB  side file %.1f MB\n", m / 1024, d / 1048576
	}'
	rm -rf "$dir"
}

echo "onnxc: $onnxc"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo) RAM"
run auto "$(to_bytes "$size")"
run external "$(to_bytes "$ext_size")" -external-data
