#!/usr/bin/python3
"""readme_commands.py BUILD_DIR SOURCE_DIR MAKE_RECORDINGS MARKDOWN... - run every
shell command of README.md and examples/README.md as written, and fail on any
that does not run.

Every line of a ```sh block runs, in order, in one bash per file (so a block
may use what an earlier one made), with `set -e`, in a scratch directory that
looks like the repository's root: `build` is the build tree and every other
top-level entry of the source tree is linked in. The data README's commands
name are prepared first: train.de/train.en (line-aligned), recordings/*.edf
and labels.csv. Not run: the Quick start (CI itself is those two commands)
and `cmake` build lines (the build tree exists; CI built it). A benchmark may
take minutes: a command still running after SS_README_TIMEOUT seconds
(default 20) counts as running; one that ends must end with status 0."""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def commands(path):
    cmds, section, block = [], '', None
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if block is None and line.startswith('#'):
            section = line
        if block is None and line.strip() in ('```sh', '```bash'):
            block = i + 1
        elif block is not None and line.strip() == '```':
            block = None
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


def prepare(work, build, source, make_recordings):
    os.symlink(build, os.path.join(work, 'build'))
    for name in os.listdir(source):
        if name not in ('build', '.git') and not name.startswith('build-'):
            os.symlink(os.path.join(source, name), os.path.join(work, name))
    fortunes = open('/usr/share/games/fortunes/fortunes', encoding='utf-8').read().split('\n')
    lines = [l for l in fortunes if l.strip() and l != '%'][:2000]
    with open(os.path.join(work, 'train.en'), 'w') as en, open(os.path.join(work, 'train.de'), 'w') as de:
        for l in lines:
            en.write(l + '\n')
            de.write(' '.join(reversed(l.split())) + '\n')  # a stand-in "translation"
    os.mkdir(os.path.join(work, 'recordings'))
    subprocess.run([make_recordings, os.path.join(work, 'recordings'), '6',
                    os.path.join(work, 'labels.csv')], check=True)


def main():
    build, source, make_recordings, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    timeout = float(os.environ.get('SS_README_TIMEOUT', '20'))
    work = tempfile.mkdtemp(prefix='ss-readme-')
    failed = ran = 0
    try:
        prepare(work, os.path.abspath(build), os.path.abspath(source), make_recordings)
        env = dict(os.environ)
        for path in files:
            for where, cmd in commands(path):
                ran += 1
                try:
                    r = subprocess.run(['bash', '-ec', cmd], cwd=work, env=env, timeout=timeout,
                                       stdin=subprocess.DEVNULL, capture_output=True, text=True)
                    status = r.returncode
                    out = (r.stdout[-2000:] + r.stderr[-2000:])
                except subprocess.TimeoutExpired:
                    print(f'{where}: still running after {timeout:.0f} s (counts as running): {cmd}')
                    continue
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
