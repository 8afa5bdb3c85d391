#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""readme_commands.py [--venv VENV] BUILD_DIR SOURCE_DIR MARKDOWN|DIR... - run
every shell command of the given Markdown files (a DIR: its *.md files) as
written, and fail on any that does not run.

With --venv, the pages are those written for the test virtual environment
(python/make-venv.sh: torch 2, moto, the pip-installed package): VENV is
linked in as `.venv` and the ```python blocks run with `.venv/bin/python`;
without it, they run with Debian's /usr/bin/python3.

Every line of a ```sh block (and every ```python block, whole) runs, in
order, each in its own `bash -e`, in one scratch directory per file that
looks like the repository's root: `build` is the build tree and every other
top-level entry of the source tree is linked in. Nothing else is prepared:
each file's commands make the data they use from packaged files, so a reader
can run them too. A line `export NAME=VALUE` sets NAME for the lines after
it, as in a shell session. The files run in parallel (SS_README_JOBS, default
3), each file's commands in order. Benchmarks run with SS_BENCH_QUICK=1
(tiny sizes: every benchmark command ends in seconds; the figures then mean
nothing). Not run: the Quick start (CI itself is those two commands),
`cmake` lines (the build tree exists; CI built it), `bench/run_all.sh`
(ctest bench_run_all_smoke runs it) and `build/tests/...` (ctest runs each
test program; tests/doc_figures.py checks the output docs quote). The
build tree is first on PATH, as an installed `seqstore` would be. A command must end with status 0 within
SS_README_TIMEOUT seconds (default 300). The slowest commands are listed at
the end."""
import concurrent.futures
import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def commands(path, python='/usr/bin/python3'):
    """(where, command) for each shell line, and for each ```python block one
    command that runs the whole block with PYTHON."""
    cmds, section, block, lang, code = [], '', None, '', []
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if block is None and line.startswith('#'):
            section = line
        if block is None and line.strip() in ('```sh', '```bash', '```python'):
            block, lang, code = i + 1, line.strip()[3:], []
        elif block is not None and line.strip() == '```':
            if lang == 'python' and not section.startswith('## Quick start'):
                cmds.append((f'{path}:{block}', python + ' -c ' + shlex.quote('\n'.join(code))))
            block = None
        elif block is not None and lang == 'python':
            code.append(line)
        elif block is not None and not section.startswith('## Quick start'):
            cmd, first = line, i + 1
            while cmd.endswith('\\'):
                i += 1
                cmd = cmd[:-1] + ' ' + lines[i].strip()
            s = cmd.strip()
            if (s and not s.startswith('#') and not re.match(r'^cmake\s', s)
                    and not s.startswith('bench/run_all.sh') and not s.startswith('build/tests/')):
                cmds.append((f'{path}:{first}', s))
        i += 1
    return cmds


def prepare(work, build, source, venv):
    os.symlink(build, os.path.join(work, 'build'))
    if venv:
        os.symlink(venv, os.path.join(work, '.venv'))
    # The repository's own entries only: a store the reader made in the
    # source tree (the Quick start's fortunes.ss) must not be there.
    r = subprocess.run(['git', '-C', source, 'ls-tree', '--name-only', 'HEAD'],
                       capture_output=True, text=True)
    names = r.stdout.split() if r.returncode == 0 else os.listdir(source)
    for name in names:
        if name not in ('build', '.git') and not name.startswith('build-'):
            os.symlink(os.path.join(source, name), os.path.join(work, name))


def run_export(cmd, work, env):
    """`export NAME=VALUE [NAME2=VALUE2...]`: the values expanded by bash,
    kept for the next lines."""
    if not re.match(r'^export\s+[A-Za-z_][A-Za-z0-9_]*=', cmd):
        return False
    r = subprocess.run(['bash', '-ec', f'{cmd}\nenv -0'], cwd=work, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    for item in r.stdout.split('\0'):
        name, sep, value = item.partition('=')
        if sep and name not in ('_', 'SHLVL', 'PWD', 'OLDPWD') and env.get(name) != value:
            env[name] = value
    return True


def run_file(path, build, source, timeout, venv):
    """Run one file's commands in their own scratch directory: (report lines,
    failures, commands run, [(seconds, where, command)])."""
    work = tempfile.mkdtemp(prefix='ss-readme-')
    report, failed, ran, times = [], 0, 0, []
    try:
        prepare(work, os.path.abspath(build), os.path.abspath(source),
                venv and os.path.abspath(venv))
        env = dict(os.environ)
        env['HOME'] = work  # nothing a command writes lands outside the scratch directory
        env['TMPDIR'] = os.path.join(work, 'tmp')
        env['SS_BENCH_QUICK'] = '1'
        env['PATH'] = os.path.abspath(build) + os.pathsep + env['PATH']
        os.mkdir(env['TMPDIR'])
        for where, cmd in commands(path, '.venv/bin/python' if venv else '/usr/bin/python3'):
            ran += 1
            if run_export(cmd, work, env):
                report.append(f'{where}: ok: {cmd}')
                continue
            # Its own process group, so that a command still running at the
            # timeout is stopped with all its children.
            t0 = time.monotonic()
            proc = subprocess.Popen(['bash', '-ec', cmd], cwd=work, env=env,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                stdout, stderr = proc.communicate()
                failed += 1
                report.append(f'{where}: still running after {timeout:.0f} s: {cmd}\n'
                              f'{stdout[-2000:]}{stderr[-2000:]}')
                continue
            secs = time.monotonic() - t0
            times.append((secs, where, cmd))
            if proc.returncode != 0:
                failed += 1
                report.append(f'{where}: exit {proc.returncode}: {cmd}\n'
                              f'{stdout[-2000:]}{stderr[-2000:]}')
            else:
                report.append(f'{where}: ok ({secs:.1f} s): {cmd}')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report, failed, ran, times


def main():
    argv, venv = sys.argv[1:], None
    if argv[:1] == ['--venv']:
        venv, argv = argv[1], argv[2:]
    if venv and not os.path.isfile(os.path.join(venv, 'bin', 'python')):
        print(f'readme_commands: skipped: no virtual environment at {venv} (run python/make-venv.sh)')
        return 1 if os.environ.get('SEQSTORE_REQUIRE_VENV') == '1' else 77
    build, source, args = argv[0], argv[1], argv[2:]
    timeout = float(os.environ.get('SS_README_TIMEOUT', '300'))
    jobs = int(os.environ.get('SS_README_JOBS', '3'))
    files = []
    for a in args:
        files += sorted(glob.glob(os.path.join(a, '*.md'))) if os.path.isdir(a) else [a]
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(lambda f: run_file(f, build, source, timeout, venv), files))
    failed = ran = 0
    times = []
    for report, f, r, t in results:
        print('\n'.join(report))
        failed, ran, times = failed + f, ran + r, times + t
    print('slowest:')
    for secs, where, cmd in sorted(times, reverse=True)[:8]:
        print(f'  {secs:6.1f} s  {where}: {cmd[:100]}')
    print(f'{ran - failed} passed, {failed} failed')
    return 1 if failed or ran == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
