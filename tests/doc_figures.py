#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""doc_figures.py BUILD_DIR SOURCE_DIR MARKDOWN|DIR... - fail when a figure
quoted in the documentation is not what the program that produces it prints.

1. A ```sh block whose last line ends with `# prints the table below` (or
   `# prints the text below`) is run, whole, in a scratch directory that
   looks like the repository's root (as tests/readme_commands.py does), and
   the last line's standard output is compared with what follows the block:
   the next ```text block (line by line, whitespace-separated fields equal),
   or the next Markdown table (every row of the document's table must be in
   the output, keyed by its first cell; a cell "M (A–B)…" holds when the
   output's median lies in A–B with the same text after it, any other cell
   must be equal). Only programs that run in seconds carry the marker.
2. Every `libseqstore.so.X` named is the SONAME of the built library.

SS_DOC_FIGURES_TIMEOUT (default 600) bounds each block."""
import glob
import os
import re
import subprocess
import sys
import tempfile
import shutil

MARK = re.compile(r'#\s*prints the (table|text) below')
RANGE = re.compile(r'^(-?[\d.]+) \((-?[\d.]+)–(-?[\d.]+)\)(.*)$')


def sh_blocks(path):
    """(line number, [command lines], kind, expected lines) for each marked block."""
    lines = open(path, encoding='utf-8').read().split('\n')
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() in ('```sh', '```bash'):
            j = i + 1
            cmds = []
            while lines[j].strip() != '```':
                if lines[j].strip() and not lines[j].strip().startswith('#'):
                    cmds.append(lines[j].strip())
                j += 1
            m = MARK.search(cmds[-1]) if cmds else None
            if m:
                kind, k, expected = m.group(1), j + 1, []
                if kind == 'text':
                    while lines[k].strip() != '```text':
                        k += 1
                    k += 1
                    while lines[k].strip() != '```':
                        expected.append(lines[k].strip())
                        k += 1
                else:
                    while not lines[k].lstrip().startswith('|'):
                        k += 1
                    while k < len(lines) and lines[k].lstrip().startswith('|'):
                        expected.append(lines[k].strip())
                        k += 1
                out.append((i + 1, cmds, kind, expected))
            i = j
        i += 1
    return out


def cells(row):
    return [c.strip() for c in row.strip().strip('|').split('|')]


def same_cell(doc, got):
    m, g = RANGE.match(doc), RANGE.match(got)
    if m and g:
        lo, hi = float(m.group(2)), float(m.group(3))
        return lo <= float(g.group(1)) <= hi and m.group(4) == g.group(4)
    return doc == got


def compare(kind, expected, output):
    """Messages for each difference (empty: the figures hold)."""
    got = [l.strip() for l in output.split('\n') if l.strip()]
    if kind == 'text':
        bad = [f'  doc:    {e}\n  prints: {g}' for e, g in zip(expected, got) if e.split() != g.split()]
        if len(got) < len(expected):
            bad.append(f'  prints {len(got)} lines, the document shows {len(expected)}')
        return bad
    rows = {cells(r)[0]: cells(r) for r in got if r.startswith('|')}
    bad = []
    for r in expected:
        c = cells(r)
        if set(''.join(c)) <= set('-: '):
            continue  # the separator row
        g = rows.get(c[0])
        if g is None:
            bad.append(f'  no row "{c[0]}" in the output')
        elif len(g) != len(c) or not all(same_cell(a, b) for a, b in zip(c, g)):
            bad.append(f'  doc:    {r}\n  prints: | {" | ".join(g)} |')
    return bad


def prepare(work, build, source):
    os.symlink(build, os.path.join(work, 'build'))
    r = subprocess.run(['git', '-C', source, 'ls-tree', '--name-only', 'HEAD'],
                       capture_output=True, text=True)
    names = r.stdout.split() if r.returncode == 0 else os.listdir(source)
    for name in names:
        if name not in ('build', '.git') and not name.startswith('build-'):
            os.symlink(os.path.join(source, name), os.path.join(work, name))


def check_block(path, line, cmds, kind, expected, build, source, timeout):
    work = tempfile.mkdtemp(prefix='ss-figures-')
    try:
        prepare(work, build, source)
        env = dict(os.environ, TMPDIR=work, HOME=work,
                   PATH=os.path.join(build) + os.pathsep + os.environ['PATH'])
        env.pop('SS_BENCH_QUICK', None)
        for k, cmd in enumerate(cmds):
            r = subprocess.run(['bash', '-ec', cmd], cwd=work, env=env, capture_output=True,
                               text=True, timeout=timeout, stdin=subprocess.DEVNULL)
            if r.returncode != 0:
                print(f'{path}:{line}: exit {r.returncode}: {cmd}\n{r.stderr[-2000:]}')
                return False
        bad = compare(kind, expected, r.stdout)
        if bad:
            print(f'{path}:{line}: the {kind} is not what `{cmds[-1]}` prints:\n' + '\n'.join(bad))
            return False
        print(f'{path}:{line}: ok: {len(expected)} lines as `{cmds[-1]}` prints them')
        return True
    finally:
        shutil.rmtree(work, ignore_errors=True)


def soname(build):
    r = subprocess.run(['readelf', '-d', os.path.join(build, 'libseqstore.so')],
                       capture_output=True, text=True)
    m = re.search(r'Library soname: \[(libseqstore\.so\.[0-9.]+)\]', r.stdout)
    return m.group(1) if m else None


def main():
    build, source, args = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3:]
    timeout = float(os.environ.get('SS_DOC_FIGURES_TIMEOUT', '600'))
    files = []
    for a in args:
        files += sorted(glob.glob(os.path.join(a, '*.md'))) if os.path.isdir(a) else [a]
    ok, checked = True, 0
    so = soname(build)
    if not so:
        print(f'no SONAME found in {build}/libseqstore.so')
        ok = False
    for path in files:
        text = open(path, encoding='utf-8').read()
        for m in re.finditer(r'libseqstore\.so\.[0-9][0-9.]*[0-9]', text):
            checked += 1
            if m.group(0) != so:
                line = text[:m.start()].count('\n') + 1
                print(f'{path}:{line}: names {m.group(0)}, the library built is {so}')
                ok = False
        for line, cmds, kind, expected in sh_blocks(path):
            checked += 1
            ok &= check_block(path, line, cmds, kind, expected, build, source, timeout)
    print(f'{checked} figures checked: {"ok" if ok else "FAILED"}')
    return 0 if ok and checked else 1


if __name__ == '__main__':
    sys.exit(main())
