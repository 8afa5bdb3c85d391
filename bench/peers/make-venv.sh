#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Make (or bring up to date) bench/peers/.venv: the peer data loaders of
# bench/peers/requirements.txt (every package pinned, dependencies included)
# and seqstore built from this tree. Only for the peer benchmark (run.sh);
# nothing in the build or the tests needs it.
#
# torch goes in first, alone: torch==2.13.0, the CPU build (a bare `torch`
# from PyPI is a multi-GB CUDA build). Then the rest with --no-deps: the list
# is complete, so pip's resolver never runs and nothing can replace torch.
# Two dependencies have no build for torch 2.13's CPU wheel (torchaudio,
# torchvision): see requirements.txt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv=$here/.venv
py=${PYTHON:-python3}
pip() { "$venv/bin/python" -m pip --disable-pip-version-check "$@"; }

if [ ! -x "$venv/bin/python" ]; then
  echo "peers make-venv: creating $venv"
  "$py" -m venv "$venv"
fi
reqsum=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ "$(cat "$venv/.stamp-requirements" 2>/dev/null)" != "$reqsum" ]; then
  echo "peers make-venv: installing torch==2.13.0 (CPU), then $here/requirements.txt"
  pip install --quiet torch==2.13.0
  pip install --quiet --no-deps -r "$here/requirements.txt"
  # torchaudio's and torchvision's compiled parts are built for other torch
  # builds (torch 2.11; CUDA) and fail to load: without them both fall back
  # to pure Python (see requirements.txt; common.torchvision_shim)
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  rm -f "$site"/torchaudio/lib/*.so "$site"/torchvision/_C.so
  "$venv/bin/python" -c 'import torch; v = torch.__version__; assert v.startswith("2.13.0"), v'
  printf '%s\n' "$reqsum" >"$venv/.stamp-requirements"
fi
srcsum=$(cd "$root" && {
  printf '%s\n' "$reqsum"
  find CMakeLists.txt pyproject.toml cmake include format sdk python/CMakeLists.txt \
    python/src python/seqstore -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.stamp-package" 2>/dev/null)" != "$srcsum" ]; then
  echo "peers make-venv: building seqstore (pip install --no-build-isolation)"
  opts=(-C build-dir="$venv/build-seqstore")
  if command -v ccache >/dev/null; then
    opts+=(-C cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  pip install --quiet --no-deps --no-build-isolation --force-reinstall --no-cache-dir \
    "${opts[@]}" "$root"
  printf '%s\n' "$srcsum" >"$venv/.stamp-package"
fi
"$venv/bin/python" -c 'import seqstore, torch; print("peers make-venv: seqstore", seqstore.__version__, "torch", torch.__version__)'
