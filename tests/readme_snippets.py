#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""readme_snippets.py CC INCLUDE_DIR MARKDOWN... - compile every ```c block of the
given Markdown files, so README's code never drifts from the API.

Function definitions in a block (at column 0, up to their closing brace at
column 0) compile at file level; the rest of the block is a fragment of a
training loop and compiles as the body of a function. All see one prelude:
<seqstore.h> and the user-side names the snippets call (consume, train_step,
...), declared, never defined. A block whose text says "as above" continues
the previous fragment of its file and is compiled after it."""
import re
import subprocess
import sys
import tempfile

PRELUDE = r'''
#include <seqstore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
/* the caller's side of the snippets: declared only */
void consume(const uint8_t *bytes, uint64_t n);
void train_step(const void *data, const void *lengths, const void *mask, uint64_t batch, uint64_t steps);
void step(const void *data, const void *state, void *final_state);
extern ss_store *store;
extern uint64_t epochs;
extern const int16_t *samples;
extern uint64_t n_samples;
extern uint8_t label;
extern const double gains[21];
extern const double *gain, *offset;
extern uint32_t signal, label_field;
extern float final_state[], final_states[];
'''


def blocks(path):
    text = open(path, encoding='utf-8').read()
    section = ''
    out = []
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith('#'):
            section = line
        if line.strip() == '```c':
            j = i + 1
            while lines[j].strip() != '```':
                j += 1
            out.append((path, i + 1, section, '\n'.join(lines[i + 1:j])))
            i = j
        i += 1
    return out


def split_functions(code):
    """(file-level function definitions, remaining statements)."""
    top, body, inside = [], [], False
    for line in code.split('\n'):
        if not inside and re.match(r'^[a-z][\w \*]*\b\w+\([^;]*\)\s*\{', line):
            inside = True
        (top if inside else body).append(line)
        if inside and line.startswith('}'):
            inside = False
    return '\n'.join(top), '\n'.join(body)


def compile_unit(cc, inc, source, where):
    with tempfile.NamedTemporaryFile('w', suffix='.c', delete=False) as f:
        f.write(source)
        name = f.name
    r = subprocess.run([cc, '-std=c11', '-Wall', '-Wno-unused-variable', '-Wno-unused-function',
                        '-Werror', '-fsyntax-only', '-I', inc, name],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f'{where}: does not compile:\n{r.stderr}')
        return False
    return True


def main():
    cc, inc, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    ok = True
    n = 0
    for path in files:
        prev_top, prev_body = '', ''
        for (p, line, section, code) in blocks(path):
            n += 1
            top, body = split_functions(code)
            if 'as above' in code:
                top, body = prev_top + '\n' + top, prev_body + '\n' + body
            prev_top, prev_body = top, body
            src = (PRELUDE + top + '\nint snippet(void);\nint snippet(void) {\n' + body +
                   '\nreturn 0;\n}\n')
            ok &= compile_unit(cc, inc, src, f'{p}:{line}')
    print(f'{n} C blocks checked: {"ok" if ok else "FAILED"}')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
