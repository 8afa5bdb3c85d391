#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Make (or bring up to date) .venv at the repository root: the pinned packages
# of python/requirements-venv.txt and the seqstore package built from this
# tree by `pip install .` (pyproject.toml). Idempotent: each step runs only
# when its inputs changed since it last succeeded (stamps in .venv), so a run
# with nothing to do takes a fraction of a second. Then:
#   .venv/bin/python -m pytest python/tests
# PYTHON picks the interpreter (default: python3 on PATH); a changed
# interpreter makes a new .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
venv=.venv
req=python/requirements-venv.txt

# 1. the environment, for this interpreter
pyid=$("$py" -c 'import sys; print(sys.executable, sys.version)')
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.stamp-python" 2>/dev/null)" != "$pyid" ] ||
  ! "$venv/bin/python" -c '' 2>/dev/null; then
  echo "make-venv: creating $venv ($pyid)"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  printf '%s\n' "$pyid" >"$venv/.stamp-python"
fi

# 2. the pinned packages
reqsum=$(sha256sum "$req" | cut -d' ' -f1)
if [ "$(cat "$venv/.stamp-requirements" 2>/dev/null)" != "$reqsum" ]; then
  echo "make-venv: installing $req"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req"
  printf '%s\n' "$reqsum" >"$venv/.stamp-requirements"
fi

# 3. the package, rebuilt when a file it is built from changed. The build
# directory is kept (build-venv/) so that a rebuild compiles only what
# changed; ccache is used when it is installed.
srcsum=$({
  printf '%s\n' "$reqsum"
  find CMakeLists.txt pyproject.toml cmake include remote format sdk python/CMakeLists.txt \
    python/src python/seqstore -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum
} | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.stamp-package" 2>/dev/null)" != "$srcsum" ]; then
  echo "make-venv: building and installing seqstore (pip install .)"
  # --config-settings, not -C: Debian bookworm's pip (23.0) lacks the short form
  opts=(--config-settings=build-dir=build-venv/{wheel_tag})
  if command -v ccache >/dev/null; then
    opts+=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  fi
  # No build isolation: the pinned scikit-build-core and numpy of step 2
  # build it (offline, and without a fresh environment per build).
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation --force-reinstall --no-cache-dir "${opts[@]}" .
  printf '%s\n' "$srcsum" >"$venv/.stamp-package"
fi
"$venv/bin/python" -c 'import seqstore, sys; print("make-venv: seqstore", seqstore.__version__, "in", sys.prefix)'
