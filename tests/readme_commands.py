#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""readme_commands.py BUILD_DIR SOURCE_DIR MARKDOWN... - run every shell command
of README.md and examples/README.md as written, and fail on any that does not
run.

Every line of a ```sh block (and every ```python block, whole) runs, in
order, each in its own `bash -e`, in one
scratch directory per run that looks like the repository's root: `build` is
the build tree and every other top-level entry of the source tree is linked
in. Nothing else is prepared: README's commands make the data they use from
packaged files, so a reader can run them too. A line `export NAME=VALUE`
sets NAME for the lines after it, as in a shell session. Not run: the Quick
start (CI itself is those two commands) and `cmake` lines (the build tree
exists; CI built it). A benchmark may take minutes: a command still running
after SS_README_TIMEOUT seconds (default 20) counts as running; one that ends
must end with status 0."""
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile


def commands(path):
    """(where, command) for each shell line, and for each ```python block one
    command that runs the whole block with /usr/bin/python3."""
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
                cmds.append((f'{path}:{block}', '/usr/bin/python3 -c ' + shlex.quote('\n'.join(code))))
            block = None
        elif block is not None and lang == 'python':
            code.append(line)
        elif block is not None and not section.startswith('## Quick start'):
            cmd, first = line, i + 1
            while cmd.endswith('\\'):
                i += 1
                cmd = cmd[:-1] + ' ' + lines[i].strip()
            s = cmd.strip()
            if s and not s.startswith('#') and not re.match(r'^cmake\s', s):
                cmds.append((f'{path}:{first}', s))
        i += 1
    return cmds


def prepare(work, build, source):
    os.symlink(build, os.path.join(work, 'build'))
    # The repository's own entries only: a store the reader made in the
    # source tree (the Quick start's fortunes.ss) must not be there.
    r = subprocess.run(['git', '-C', source, 'ls-tree', '--name-only', 'HEAD'],
                       capture_output=True, text=True)
    names = r.stdout.split() if r.returncode == 0 else os.listdir(source)
    for name in names:
        if name not in ('build', '.git') and not name.startswith('build-'):
            os.symlink(os.path.join(source, name), os.path.join(work, name))


def run_export(cmd, work, env):
    """`export NAME=VALUE`: VALUE expanded by bash, kept for the next lines."""
    m = re.match(r'^export\s+([A-Za-z_][A-Za-z0-9_]*)=', cmd)
    if not m:
        return False
    name = m.group(1)
    r = subprocess.run(['bash', '-ec', f'{cmd}\nprintf %s "${name}"'], cwd=work, env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True)
    env[name] = r.stdout
    return True


def main():
    build, source, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    timeout = float(os.environ.get('SS_README_TIMEOUT', '20'))
    work = tempfile.mkdtemp(prefix='ss-readme-')
    failed = ran = 0
    try:
        prepare(work, os.path.abspath(build), os.path.abspath(source))
        env = dict(os.environ)
        env['HOME'] = work  # nothing a command writes lands outside the scratch directory
        env['TMPDIR'] = os.path.join(work, 'tmp')
        os.mkdir(env['TMPDIR'])
        for path in files:
            for where, cmd in commands(path):
                ran += 1
                if run_export(cmd, work, env):
                    print(f'{where}: ok: {cmd}')
                    continue
                # Its own process group, so that a benchmark still running at
                # the timeout is stopped with all its children, and its own
                # TMPDIR inside the scratch directory, so that the files it
                # leaves when stopped go with the scratch directory.
                proc = subprocess.Popen(['bash', '-ec', cmd], cwd=work, env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True,
                                        start_new_session=True)
                try:
                    stdout, stderr = proc.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.communicate()
                    print(f'{where}: still running after {timeout:.0f} s (counts as running): {cmd}')
                    continue
                status = proc.returncode
                out = stdout[-2000:] + stderr[-2000:]
                if status != 0:
                    failed += 1
                    print(f'{where}: exit {status}: {cmd}\n{out}')
                else:
                    print(f'{where}: ok: {cmd}')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f'{ran - failed} passed, {failed} failed')
    return 1 if failed or ran == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
