#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""spdx.py SOURCE_DIR [--fix] - every source file of the repository carries
the project's license as an SPDX identifier on its first lines (after a #!
line). Without --fix, list the files that lack it and fail; with --fix, add
it. Source files: *.c *.h *.cc *.py *.sh *.cmake CMakeLists.txt, .ci/ scripts
and completion/."""
import os
import subprocess
import sys

ID = 'SPDX-License-Identifier: BSD-2-Clause'
COMMENT = {'.c': '/* {} */', '.h': '/* {} */', '.cc': '// {}', '.py': '# {}', '.sh': '# {}',
           '.cmake': '# {}', '.txt': '# {}', '': '# {}', '.bash': '# {}', '.in': None}


def listed(root):
    """The tracked files; outside a git checkout (a source tarball), every
    file but build trees."""
    try:
        return subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                              check=True).stdout.split('\n')
    except (OSError, subprocess.CalledProcessError):
        out = []
        for d, dirs, files in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith(('build', '.git'))]
            out += [os.path.relpath(os.path.join(d, f), root) for f in files]
        return out


def sources(root):
    for path in listed(root):
        if not path or path.startswith('fuzz/corpus/') or path.startswith('tests/data/'):
            continue
        base = os.path.basename(path)
        ext = os.path.splitext(base)[1]
        if ext in ('.c', '.h', '.cc', '.py', '.sh', '.cmake', '.bash') or base == 'CMakeLists.txt' \
                or (path.startswith('.ci/') and ext == ''):
            yield path, ('.txt' if base == 'CMakeLists.txt' else ext)


def main():
    root, fix = sys.argv[1], '--fix' in sys.argv[2:]
    missing = []
    for path, ext in sources(root):
        full = os.path.join(root, path)
        with open(full, encoding='utf-8') as f:
            text = f.read()
        if ID in '\n'.join(text.split('\n')[:3]):
            continue
        missing.append(path)
        if fix:
            line = COMMENT[ext].format(ID) + '\n'
            if text.startswith('#!'):
                first, _, rest = text.partition('\n')
                text = first + '\n' + line + rest
            else:
                text = line + text
            with open(full, 'w', encoding='utf-8') as f:
                f.write(text)
    if missing and not fix:
        print('no SPDX identifier in:\n  ' + '\n  '.join(missing))
        print(f'(run: {sys.argv[0]} {root} --fix)')
        return 1
    print(f'{len(missing)} files {"fixed" if fix else "missing"}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
