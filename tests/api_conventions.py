# SPDX-License-Identifier: BSD-2-Clause
"""api_conventions.py - check the public headers against the conventions
block of seqstore.h, the rules a machine can check:

  1. Out-parameters first: in a function returning int, no output parameter
     follows an input parameter. An output is a pointer to pointer (T **) or
     a non-const pointer to anything but an opaque object; an input is a
     const pointer or a pointer to an opaque object (the object worked on);
     parameters passed by value (a capacity, a dtype, an index) may stand
     anywhere.
  2. A function whose only output is a pointer to pointer names it `out`;
     a function taking a store and a selection takes the store first.
  3. Return codes: every SS_E... / SS_ITEROVER a header names is in the
     error table, every code in the table is 0 or negative, and no
     documented return is a positive number ("SS_X (1)").
     Only the PREDICATES below return 1 (yes) or 0 (no) instead.
  4. Every SS_..._INIT macro has its ss_..._init(out, version) function.
  5. Saved state: every object that saves one has the three functions
     size_t ss_X_state_size(const ss_X *, ...),
     int ss_X_state_save(void *buf, size_t cap, size_t *len, const ss_X *, ...)
     and int ss_X_state_load(ss_X *, const void *buf, size_t len), and the
     size is asked only of the function: no SS_..._STATE_... size macro, no
     _save_size() or _restore() under another name.

Usage: api_conventions.py SOURCE_DIR. Exit status 1 lists each breach.
"""
import glob
import os
import re
import sys

# Functions allowed to break a rule, with the reason. Keep it empty: a new
# entry needs a reason a reviewer accepts.
EXCEPTIONS = {}

# The int functions that answer yes or no (1 or 0) instead of a code; any
# other whose documentation says it returns 1 breaks rule 3.
PREDICATES = {"ss_selection_contains", "ss_bucket_descending", "ss_views_stable"}


def headers(root):
    inc = os.path.join(root, "include")
    return [os.path.join(inc, "seqstore.h")] + sorted(
        glob.glob(os.path.join(inc, "seqstore", "*.h")))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def split_params(params):
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_kind(p, opaque):
    """'out', 'in' or 'value' for one parameter declaration."""
    if p in ("void", "...") or "(" in p or re.search(r"\bvoid \*ctx$", p):
        return "value"  # a callback's context is the caller's, passed through
    m = re.match(r"(.*?)(\w+)$", p)
    decl = m.group(1) if m else p
    if "*" not in decl:
        return "value"
    if decl.count("*") >= 2 and "*const" not in decl.replace(" ", ""):
        return "out"
    base = decl.replace("*", " ").split()
    is_const = decl.strip().startswith("const") or " const " in f" {decl} "
    typ = [w for w in base if w not in ("const", "struct", "unsigned")]
    typ = typ[-1] if typ else ""
    if is_const or typ in opaque:
        return "in"
    return "out"


def state_rules(code, opaque):
    """Rule 5 over the headers' code (comments stripped)."""
    problems = []
    decls = {m.group(2): (m.group(1), [p for p in split_params(" ".join(m.group(3).split()))])
             for m in re.finditer(r"SS_API\s+(\w+)\s+(ss_\w+)\s*\(([^;]*?)\)\s*;", code, re.S)}
    objects = {re.sub(r"_state_(size|save|load)$", "", fn) for fn in decls
               if re.search(r"_state_(size|save|load)$", fn)}
    for obj in sorted(objects):
        if obj not in opaque:
            problems.append(f"{obj}_state_...: {obj} is no opaque object")
        want = {
            "size": ("size_t", [f"const {obj} *"]),
            "save": ("int", ["void *buf", "size_t cap", "size_t *len", f"const {obj} *"]),
            "load": ("int", [f"{obj} *", "const void *buf", "size_t len"]),
        }
        for verb, (ret, head) in want.items():
            fn = f"{obj}_state_{verb}"
            if fn not in decls:
                problems.append(f"{obj} saves state but has no {fn}()")
                continue
            got_ret, ps = decls[fn]
            exact = verb == "load"  # a load takes nothing else; size and save may take flags
            ok = got_ret == ret and len(ps) >= len(head) and (not exact or len(ps) == len(head))
            for p, h in zip(ps, head):
                ok = ok and (p == h or (h.endswith("*") and p.startswith(h)))
            if not ok:
                problems.append(f"{fn}: declared {got_ret} {fn}({', '.join(ps)}); the rule is "
                                f"{ret} {fn}({', '.join(head)}{', ...' if not exact else ''})")
    for fn in decls:
        if re.search(r"_(save_size|restore)$", fn):
            problems.append(f"{fn}: saved state is ss_X_state_size/_save/_load")
    for m in re.finditer(r"#define\s+(SS_\w*STATE\w*)\s+\(?\s*\d", code):
        problems.append(f"{m.group(1)}: a state size is asked of ss_X_state_size() only, no macro")
    return problems


def main(root):
    problems = []
    text = {h: open(h).read() for h in headers(root)}
    code = {h: strip_comments(t) for h, t in text.items()}
    all_code = "\n".join(code.values())
    opaque = set(re.findall(r"typedef struct (ss_\w+) \1;", all_code))
    table = dict((n, int(v)) for n, v in re.findall(r"X\((SS_\w+), (-?\d+),", all_code))
    for name, value in table.items():
        if value > 0:
            problems.append(f"error table: {name} = {value} is positive")
    for h, c in code.items():
        short = os.path.relpath(h, root)
        for m in re.finditer(r"SS_API\s+int\s+(ss_\w+)\s*\(([^;]*?)\)\s*(?:__attribute__\S*)?\s*;",
                             c, flags=re.S):
            fn, params = m.group(1), " ".join(m.group(2).split())
            if fn in EXCEPTIONS:
                continue
            ps = split_params(params)
            kinds = [param_kind(p, opaque) for p in ps]
            seen_in = None
            for p, k in zip(ps, kinds):
                if k == "in" and seen_in is None:
                    seen_in = p
                if k == "out" and seen_in is not None:
                    problems.append(f"{short}: {fn}: output '{p}' after input '{seen_in}'")
            st = [i for i, p in enumerate(ps) if re.match(r"const ss_store \*", p)]
            se = [i for i, p in enumerate(ps) if re.match(r"const ss_selection \*", p)]
            if st and se and se[0] < st[0]:
                problems.append(f"{short}: {fn}: the selection comes before the store")
            outs = [p for p, k in zip(ps, kinds) if k == "out"]
            if len(outs) == 1 and "**" in outs[0].replace(" ", "") \
                    and not outs[0].endswith("out"):
                problems.append(f"{short}: {fn}: its one output '{outs[0]}' is not named out")
        for name in re.findall(r"\bSS_(?:E[A-Z]+|ITEROVER)\b", text[h]):
            if name not in table:
                problems.append(f"{short}: names {name}, which is not in the error table")
        for m in re.finditer(r"@return[^@]*?\b(SS_\w+) \((\d+)\)", text[h]):
            problems.append(f"{short}: documents {m.group(1)} = {m.group(2)}, a positive return")
        for m in re.finditer(r"/\*\*((?:(?!\*/).)*)\*/\s*SS_API\s+int\s+(ss_\w+)\s*\(",
                             text[h], flags=re.S):
            doc, fn = m.group(1), m.group(2)
            if fn not in PREDICATES and re.search(r"(?<![\w.])1 (if|or 0)\b|[A-Z] \(1\)", doc):
                problems.append(f"{short}: {fn} documents a return of 1 but is no predicate")
        for macro in re.findall(r"#define (SS_\w+)_INIT\b", c):
            fn = macro.lower() + "_init"
            if not re.search(r"SS_API\s+int\s+" + fn + r"\s*\(", all_code):
                problems.append(f"{short}: {macro}_INIT has no {fn}()")
    problems += state_rules(all_code, opaque)
    for p in problems:
        print(p)
    print(f"{len(problems)} breach(es) of the conventions in {len(text)} headers")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
