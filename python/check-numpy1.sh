#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# The package under NumPy 1.24 (the oldest NumPy it supports): a small
# virtual environment .venv-numpy1 with numpy==1.24.4 and pytest only (no
# torch), the seqstore wheel built by python -m build in .venv (against
# NumPy 2, whose headers target 1.x too) installed into it, then the
# package's tests: those that need torch, torchdata or the build tools skip.
#   python/check-numpy1.sh [pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv-numpy1
[ -x .venv/bin/python ] || { echo "check-numpy1: no .venv: run python/make-venv.sh" >&2; exit 2; }
rm -rf "$venv"
.venv/bin/python -m venv "$venv"
pins=$(grep -E '^(pytest|iniconfig|packaging|pluggy|Pygments)==' python/requirements-venv.txt)
# shellcheck disable=SC2086
"$venv/bin/python" -m pip install -q --disable-pip-version-check numpy==1.24.4 $pins
dist=$(mktemp -d)
trap 'rm -rf "$dist"' EXIT
opts=(-C build-dir=build-wheel/{wheel_tag})
command -v ccache >/dev/null && opts+=(-C cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
.venv/bin/python -m build -q --wheel --no-isolation --outdir "$dist" "${opts[@]}" . >/dev/null
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$dist"/seqstore-*.whl
"$venv/bin/python" -c 'import numpy, seqstore; print("check-numpy1: numpy", numpy.__version__, "seqstore", seqstore.__version__)'
"$venv/bin/python" -m pytest -q python/tests "$@"
