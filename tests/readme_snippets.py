#!/usr/bin/python3
# SPDX-License-Identifier: BSD-2-Clause
"""readme_snippets.py CC INCLUDE_DIR LIB_DIR CLI MARKDOWN|DIR... - build and run every
```c block of the given Markdown files in the program a reader would write
around it, so README's code never drifts from the API and never crashes.

Function definitions in a block (at column 0, up to their closing brace at
column 0) go at file level; the rest of the block is the body of a function
that main() calls. A block whose text says "as above" continues the previous
fragment of its file (its functions and statements come first), as a reader
pastes it after the code above.

The harness defines what the snippets leave to the reader: consume(),
train_step() and step() (they read their arguments), `store` (an open store
with a sequence field `signal` [T][2] i16 with per-channel `signal.gain` /
`signal.offset` and `signal.sample_rate` 100, a scalar u8 `label` and a
sequence field `tokens` of u16, in that order, so fields 0 and 1 are signal
and label), `epochs` = 2, and the writing snippet's samples, label and gains.
Each program runs in a fresh directory holding `fortunes.ss` (the quick
start's store, made with CLI) under AddressSanitizer and UBSan (no leak
check: a fragment ends without freeing what a longer program would reuse);
it must exit 0 within 120 s."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

PRELUDE = r'''
#include <seqstore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* the reader's side of the snippets */
static volatile uint64_t g_sink;
static void consume(const uint8_t *bytes, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) g_sink += bytes[i];
}
static void train_step(const void *data, const void *lengths, const void *mask, uint64_t batch,
                       uint64_t steps) {
    g_sink += (uintptr_t)data + (uintptr_t)lengths + (uintptr_t)mask + batch * steps;
    if (batch && !data) abort();
}
static float final_state[32 * 256], final_states[32 * 256];
static void step(const void *data, const void *state, void *final) {
    if (!data || !state || !final) abort();
    g_sink += *(const unsigned char *)data;
}
static ss_store *store;
static uint64_t epochs = 2;
static int16_t samples_buf[100 * 21];
static const int16_t *samples = samples_buf;
static uint64_t n_samples = 100;
static uint8_t label = 3;
static const double gains[21] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
static const double gain2[2] = {0.5, 0.25}, offset2[2] = {0, 1};
static const double *gain = gain2, *offset = offset2;
static uint32_t signal = 0, label_field = 1;

/* The harness store: signal [T][2] i16, label u8, tokens u16. */
static int harness_store(const char *path) {
    ss_field f[3] = {{"signal", SS_I16, 1, 1, {2}}, {"label", SS_U8, 0, 0, {0}},
                     {"tokens", SS_U16, 1, 0, {0}}};
    ss_schema schema = {3, f};
    ss_writer_options o = SS_WRITER_OPTIONS_INIT;
    o.flags = SS_WRITE_FORCE;
    ss_writer *w;
    if (ss_writer_create(&w, path, &schema, &o)) return -1;
    static int16_t sig[1200 * 2];
    static uint16_t tok[600];
    for (uint64_t i = 0; i < 200; i++) {
        uint64_t t = 400 + (i * 37) % 800, n = 1 + (i * 53) % 600;
        for (uint64_t k = 0; k < t * 2; k++) sig[k] = (int16_t)((i * 7 + k * 3) % 2000 - 1000);
        for (uint64_t k = 0; k < n; k++) tok[k] = (uint16_t)(4 + (i + k) % 3000);
        uint8_t y = (uint8_t)(i % 10);
        ss_value v[3] = {{sig, t}, {&y, 1}, {tok, n}};
        if (ss_writer_append(w, v)) return -1;
    }
    double rate = 100;
    if (ss_writer_set_attr(w, "signal.gain", SS_F64, gain2, sizeof gain2) ||
        ss_writer_set_attr(w, "signal.offset", SS_F64, offset2, sizeof offset2) ||
        ss_writer_set_attr(w, "signal.sample_rate", SS_F64, &rate, sizeof rate) ||
        ss_writer_finish(w))
        return -1;
    ss_writer_free(w);
    return 0;
}
'''

MAIN = r'''
int main(void) {
    if (harness_store("harness.ss") || ss_open(&store, "harness.ss", 0)) {
        fprintf(stderr, "harness: %s\n", ss_error_message());
        return 99;
    }
    (void)final_state; (void)final_states; (void)samples; (void)n_samples; (void)label;
    (void)gains; (void)gain; (void)offset; (void)signal; (void)label_field; (void)epochs;
    int rc = snippet();
    ss_close(store);
    return rc;
}
'''


def blocks(path):
    text = open(path, encoding='utf-8').read()
    out = []
    lines = text.split('\n')
    i = 0
    while i < len(lines):
        if lines[i].strip() == '```c':
            j = i + 1
            while lines[j].strip() != '```':
                j += 1
            out.append((path, i + 1, '\n'.join(lines[i + 1:j])))
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


def continue_fragment(prev, body):
    """The previous fragment continued by `body`. A block that sets options
    (`o.NAME = ...`) "as above" configures the object the fragment above
    opens: it goes before that fragment's first ss_..._open() call, as a reader
    adds a line to the options before the open; any other block follows."""
    lines = prev.split('\n')
    if re.search(r'^\s*o\.\w+\s*=|;\s*o\.\w+\s*=', body, re.M):
        for k, line in enumerate(lines):
            if re.search(r'\bss_\w+_open\(', line):
                return '\n'.join(lines[:k] + [body] + lines[k:])
    return prev + '\n' + body


def build_and_run(cc, inc, libdir, cli, source, where, work):
    src = os.path.join(work, 'snippet.c')
    exe = os.path.join(work, 'snippet')
    with open(src, 'w') as f:
        f.write(source)
    r = subprocess.run([cc, '-std=c11', '-g', '-O1', '-Wall', '-Wno-unused-variable',
                        '-Wno-unused-function', '-Werror', '-fsanitize=address,undefined',
                        '-fno-sanitize-recover=undefined', '-I', inc, src, '-o', exe,
                        '-L', libdir, '-lseqstore', '-Wl,-rpath,' + libdir],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f'{where}: does not build:\n{r.stderr}')
        return False
    r = subprocess.run([cli, 'convert', 'text', '--quiet', '--force', '--doc-sep', '%',
                        '/usr/share/games/fortunes/fortunes', '-o', 'fortunes.ss'], cwd=work,
                       capture_output=True, text=True)
    if r.returncode != 0:
        print(f'{where}: harness: seqstore convert failed:\n{r.stderr}')
        return False
    env = dict(os.environ, ASAN_OPTIONS='detect_leaks=0:abort_on_error=0',
               UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1')
    try:
        r = subprocess.run([exe], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print(f'{where}: still running after 120 s')
        return False
    if r.returncode != 0:
        print(f'{where}: exit {r.returncode} when run:\n{r.stdout[-3000:]}{r.stderr[-3000:]}')
        return False
    return True


def main():
    cc, inc, libdir, cli = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    files = []
    for a in sys.argv[5:]:  # a directory: its *.md files
        files += sorted(glob.glob(os.path.join(a, '*.md'))) if os.path.isdir(a) else [a]
    ok = True
    n = 0
    for path in files:
        prev_top, prev_body = '', ''
        for (p, line, code) in blocks(path):
            n += 1
            top, body = split_functions(code)
            if 'as above' in code:
                top, body = prev_top + '\n' + top, continue_fragment(prev_body, body)
            prev_top, prev_body = top, body
            src = (PRELUDE + top + '\nstatic int snippet(void) {\n' + body +
                   '\nreturn 0;\n}\n' + MAIN)
            work = tempfile.mkdtemp(prefix='ss-snippet-')
            try:
                good = build_and_run(cc, inc, libdir, cli, src, f'{p}:{line}', work)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(f'{p}:{line}: {"ok" if good else "FAILED"}')
            ok &= good
    print(f'{n} C blocks built and run: {"ok" if ok else "FAILED"}')
    return 0 if ok and n else 1


if __name__ == '__main__':
    sys.exit(main())
