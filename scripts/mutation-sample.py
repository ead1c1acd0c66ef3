#!/usr/bin/env python3
"""mutation-sample.py - mechanically generated mutants of the library (`make mutation-sample`).

    scripts/mutation-sample.py [--seed N] [--count N] [--folders a,b] [--timeout S]
                               [--list] [--only ID...] [--report-from LOG...] [--write FILE]

Reads the library's C sources (HSAD_LIB_SRCS of the folders given; default hsa-dispatch, fusion,
memory: the folders MUTATION_TESTS drive), skipping comments, strings, character constants and
preprocessor lines, and lists every site inside a function body where one of these single-point
changes applies:
  rel     a relational operator swapped (< <=, > >=, == !=, each way)
  arith   an arithmetic, bitwise or logical operator swapped (+ -, * /, % /, << >>, & |, ^ |,
          && ||, += -=, |= &=, ++ --), binary operators only
  const   an integer constant off by one (N -> N+1, or N-1 when N > 1; chosen by the seed)
  negate  the condition of an if or while negated (if (c) -> if (!(c)))
  delcall a call statement deleted (f(...); -> ;)
  delasgn an assignment statement deleted (x = e; -> ;)
  swap    two adjacent arguments of a call swapped (f(a, b) -> f(b, a); textually equal ones not)
Then draws --count sites (default 200) with random.Random(--seed, default 18), each operator its
share (QUOTA below) of the sorted list, writes each as a patch (BUILD/mutation-sample/patches/NNN-file-line-op.patch, a header
naming the change) and runs them all through scripts/mutation.sh: the same private copy of the
tree, the same test binaries (MUTATION_TESTS) and environment as `make mutation`, each binary
under a deadline (--timeout, default 60 s: a mutant that hangs a test is killed by timeout). With
make coverage's per-test counters (BUILD_COV/coverage/per-test/*.json, BUILD_COV default
build-cov, newer than every sampled source) each patch names the test binaries that execute its
lines (`Tests:`; mutation.sh runs only those), and a mutant on lines no test binary executes
survives without a run (its verdict says so). A
mutant that does not compile is stillborn and not counted. The log (mutation.sh's lines) goes to
BUILD/mutation-sample/log as it runs.
The report: per file, mutants killed / survived / equivalent / stillborn and the score
killed / (sampled - stillborn - equivalent); each survivor as file:line, operator, the text
before and after. tests/mutation-sample/equivalent.txt lists triaged equivalent mutants, one a
line: `ID | reason` (ID: file:line:op:before=>after, as --list prints it);
tests/mutation-sample/survivors.txt the same for survivors left as they are (why no test
kills them), printed beside them.
  --list            print the sample (id and change) and stop; nothing is built
  --only NNN...     run only these sample numbers (after adding a test for a survivor)
  --resume          run only the mutants no earlier log of BUILD/mutation-sample has a verdict for
  --report          write the report from the logs of BUILD/mutation-sample (log-*, oldest
                    first: a later verdict wins), run nothing
  --write FILE      also write the report (markdown) to FILE
Exit status 0 when the score reaches --target (default 80%), 1 below it, 2 on a setup error.
"""
import argparse
import difflib
import os
import random
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FOLDERS = ("hsa-dispatch", "fusion", "memory")
EQUIVALENT_FILE = os.path.join(ROOT, "tests", "mutation-sample", "equivalent.txt")
NOTES_FILE = os.path.join(ROOT, "tests", "mutation-sample", "survivors.txt")

KEYWORDS = {
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Bool", "bool", "_Atomic", "_Alignof",
    "_Static_assert", "static_assert", "__typeof__", "typeof", "__attribute__", "alignof",
    "_Thread_local", "__thread", "offsetof",
}
TYPE_WORDS = {"char", "int", "long", "short", "void", "unsigned", "signed", "float", "double",
              "const", "volatile", "bool", "_Bool", "struct", "union", "enum", "_Atomic",
              "restrict", "static", "extern", "inline"}
PUNCT = sorted(""">>= <<= ... -> ++ -- << >> <= >= == != && || += -= *= /= %= &= |= ^=
{ } [ ] ( ) ; : , . ? ~ ! + - * / % < > & | ^ =""".split(), key=len, reverse=True)
REL = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
ARITH = {"+": "-", "-": "+", "*": "/", "/": "*", "%": "/", "<<": ">>", ">>": "<<", "&": "|",
         "|": "&", "^": "|", "&&": "||", "||": "&&", "+=": "-=", "-=": "+=", "|=": "&=",
         "&=": "|=", "++": "--", "--": "++"}
# shares of the sample per operator (of 200: rel 30, arith 35, const 35, negate 30, delcall 25,
# delasgn 25, swap 20): every kind of bug the issue names, none drowning the others
QUOTA = (("rel", 30), ("arith", 35), ("const", 35), ("negate", 30), ("delcall", 25),
         ("delasgn", 25), ("swap", 20))
ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="}

TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<comment>/\*.*?\*/|//[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>0[xX][0-9a-fA-F]+[uUlL]*|\d+\.\d*(?:[eE][-+]?\d+)?[fF]?|\d+[uUlL]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<punct>""" + "|".join(re.escape(p) for p in PUNCT) + r""")
""", re.S | re.X)


class Tok:
    __slots__ = ("kind", "text", "start", "end", "line", "in_body", "parens")

    def __init__(self, kind, text, start, end, line):
        self.kind, self.text, self.start, self.end, self.line = kind, text, start, end, line
        self.in_body, self.parens = False, 0


def tokenize(src):
    """Significant tokens of C source: no comments, no preprocessor lines (strings kept as one
    token, so nothing inside them is mutated)."""
    toks, pos, line, at_line_start = [], 0, 1, True
    while pos < len(src):
        if at_line_start:
            m = re.match(r"[ \t]*#(?:[^\n]*\\\n)*[^\n]*", src[pos:])
            if m:   # a preprocessor line with its continuations
                line += m.group(0).count("\n")
                pos += m.end()
                continue
        m = TOKEN_RE.match(src, pos)
        if not m:
            raise ValueError("cannot tokenize at line %d: %r" % (line, src[pos:pos + 20]))
        kind, text = m.lastgroup, m.group(0)
        if kind not in ("ws", "comment"):
            toks.append(Tok(kind, text, pos, m.end(), line))
        nl = text.count("\n")
        line += nl
        at_line_start = (kind == "ws" and nl > 0) or (kind == "comment" and text.startswith("//"))
        if kind == "comment" and nl:
            at_line_start = False
        pos = m.end()
    mark_bodies(toks)
    return toks


def mark_bodies(toks):
    """Marks the tokens inside function bodies (a top-level '{' right after ')') and counts the
    parentheses around each token."""
    depth, in_fn, parens = 0, False, 0
    for i, t in enumerate(toks):
        if t.text == "(":
            parens += 1
        elif t.text == ")":
            parens -= 1
        t.parens = parens
        if t.text == "{":
            if depth == 0:
                in_fn = i > 0 and toks[i - 1].text == ")"
            depth += 1
        elif t.text == "}":
            depth -= 1
        elif depth > 0 and in_fn:
            t.in_body = True


def matching(toks, i):
    """Index of the bracket closing toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    want, depth = pairs[toks[i].text], 0
    for j in range(i, len(toks)):
        if toks[j].text == toks[i].text:
            depth += 1
        elif toks[j].text == want:
            depth -= 1
            if depth == 0:
                return j
    return None


def operand_end(t):
    """True when t can end an operand (so the operator after it is binary)."""
    return (t.kind == "number" or t.kind == "string" or t.text in (")", "]") or
            (t.kind == "ident" and t.text not in KEYWORDS))


def looks_declarator_star(toks, i):
    """'*' of a declaration or cast: 'foo_t *p', 'struct x *p', '(char *)', 'f(int *)'."""
    prev, nxt = toks[i - 1], toks[i + 1]
    if nxt.text in (")", ",", "*", "const"):
        return True
    if prev.kind == "ident" and (prev.text.endswith("_t") or prev.text in TYPE_WORDS):
        return True
    if i >= 2 and toks[i - 2].text in ("struct", "union", "enum"):
        return True
    if prev.kind == "ident" and toks[i - 2].text in ("(", ",", ";", "{", "}") and \
            nxt.kind == "ident" and toks[i + 2].text in ("=", ";", ",", ")", "["):
        return True   # 'type *name = ...' with a type not ending in _t: not an expression
    return False


def arg_shape(text):
    """A coarse type of an argument: swapping a string with a number, an address with a value or
    a memory order with an index only makes a mutant the compiler refuses or warns about."""
    if text.startswith('"'):
        return "string"
    if text.startswith("memory_order"):
        return "order"
    if text.startswith("&"):
        return "address"
    return "value"


def statement_start(toks, i):
    return i > 0 and toks[i - 1].text in (";", "{", "}", "else") and toks[i].in_body and \
        toks[i].parens == 0


LVALUE_RE = re.compile(r"^\**I(?:(?:\.|->)I|\[[^;]*\])*$")


def is_lvalue(toks):
    """'x', '*p', 'a->b.c[i + 1]': what an assignment statement assigns (not a declaration)."""
    shape = "".join("I" if t.kind == "ident" else t.text if t.text in ("*", ".", "->") else
                    t.text if t.text in "[]" else "n" for t in toks)
    return bool(LVALUE_RE.match(shape))


def sites(path, src, rng):
    """Every mutation site of one file: (line, op, start, end, replacement)."""
    toks = tokenize(src)
    out = []
    for i, t in enumerate(toks):
        if not t.in_body or i + 2 >= len(toks):
            continue
        line_text = src[src.rfind("\n", 0, t.start) + 1:src.find("\n", t.start)]
        if "static_assert" in line_text or "_Static_assert" in line_text:
            continue
        if t.kind == "punct":
            if t.text in REL and operand_end(toks[i - 1]):
                out.append((t.line, "rel", t.start, t.end, REL[t.text]))
            elif t.text in ("++", "--"):
                out.append((t.line, "arith", t.start, t.end, ARITH[t.text]))
            elif t.text in ARITH and operand_end(toks[i - 1]):
                if t.text == "*" and looks_declarator_star(toks, i):
                    continue
                if t.text == "&" and toks[i - 1].kind == "ident" and \
                        toks[i - 1].text.endswith("_t"):
                    continue
                out.append((t.line, "arith", t.start, t.end, ARITH[t.text]))
        elif t.kind == "number" and re.fullmatch(r"\d+[uUlL]*|0[xX][0-9a-fA-F]+[uUlL]*", t.text):
            if toks[i - 1].text == "[" and toks[i - 2].kind == "ident" and \
                    toks[i - 3].kind == "ident":
                continue   # an array's size in a declaration
            m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)", t.text)
            value = int(m.group(1), 0) if not re.fullmatch(r"0\d+", m.group(1)) \
                else int(m.group(1), 8)
            new = value + 1 if value <= 1 or rng.random() < 0.5 else value - 1
            text = (hex(new) if m.group(1).lower().startswith("0x") else str(new)) + m.group(2)
            out.append((t.line, "const", t.start, t.end, text))
        elif t.text in ("if", "while") and toks[i + 1].text == "(":
            close = matching(toks, i + 1)
            if close:
                cond = src[toks[i + 2].start:toks[close - 1].end]
                out.append((t.line, "negate", toks[i + 2].start, toks[close - 1].end,
                            "!(" + cond + ")"))
        elif t.kind == "ident" and toks[i + 1].text == "(" and t.text not in KEYWORDS:
            close = matching(toks, i + 1)
            if close is None:
                continue
            # a call statement: f(...); or (void)f(...);
            first = i
            if i >= 3 and [x.text for x in toks[i - 3:i]] == ["(", "void", ")"]:
                first = i - 3
            if close + 1 < len(toks) and toks[close + 1].text == ";" and \
                    statement_start(toks, first):
                out.append((t.line, "delcall", toks[first].start, toks[close + 1].end, ";"))
            # adjacent arguments
            args, depth, begin = [], 0, i + 2
            for j in range(i + 2, close + 1):
                x = toks[j].text
                if x in ("(", "[", "{"):
                    depth += 1
                elif x in (")", "]", "}") and j != close:
                    depth -= 1
                elif (x == "," and depth == 0) or j == close:
                    if j > begin:
                        args.append((begin, j - 1))
                    begin = j + 1
            for k in range(len(args) - 1):
                a, b = args[k], args[k + 1]
                ta = src[toks[a[0]].start:toks[a[1]].end]
                tb = src[toks[b[0]].start:toks[b[1]].end]
                if ta != tb and arg_shape(ta) == arg_shape(tb):
                    out.append((t.line, "swap", toks[a[0]].start, toks[b[1]].end,
                                tb + src[toks[a[1]].end:toks[b[0]].start] + ta))
        if t.kind == "ident" and statement_start(toks, i) and t.text not in KEYWORDS:
            # an assignment statement: lvalue op= expr ;
            j, depth = i, 0
            while j < len(toks) and (depth > 0 or toks[j].text not in ASSIGN_OPS | {";", "(", "{"}):
                if toks[j].text == "[":
                    depth += 1
                elif toks[j].text == "]":
                    depth -= 1
                j += 1
            if j < len(toks) and toks[j].text in ASSIGN_OPS and is_lvalue(toks[i:j]):
                end, depth = j, 0
                while end < len(toks):
                    if toks[end].text in ("(", "[", "{"):
                        depth += 1
                    elif toks[end].text in (")", "]", "}"):
                        depth -= 1
                    elif toks[end].text == ";" and depth == 0:
                        break
                    end += 1
                if end < len(toks) and depth == 0:
                    out.append((t.line, "delasgn", t.start, toks[end].end, ";"))
    return out


def library_sources(folders):
    """HSAD_LIB_SRCS of the given folders, in the order of their module.mk."""
    srcs = []
    for folder in folders:
        mk = open(os.path.join(ROOT, folder, "module.mk")).read().replace("\\\n", " ")
        for m in re.finditer(r"^HSAD_LIB_SRCS\s*\+=(.*)$", mk, re.M):
            srcs += [s for s in m.group(1).split() if s.startswith(folder + "/")]
    return srcs


class Mutant:
    def __init__(self, num, path, line, op, start, end, repl, src):
        self.num, self.path, self.line, self.op = num, path, line, op
        self.start, self.end, self.repl = start, end, repl
        self.before = src[start:end]
        self.after = repl
        self.name = "%03d-%s-%d-%s" % (num, path.replace("/", "_"), line, op)

    def ident(self):
        short = lambda s: " ".join(s.split())[:60]
        return "%s:%d:%s:%s=>%s" % (self.path, self.line, self.op, short(self.before),
                                    short(self.after))

    def lines(self):
        return range(self.line, self.line + self.before.count("\n") + 1)

    def patch(self, src, tests=None):
        new = src[:self.start] + self.repl + src[self.end:]
        diff = difflib.unified_diff(src.splitlines(True), new.splitlines(True),
                                    "a/" + self.path, "b/" + self.path, n=3)
        head = ("Mutant %d of make mutation-sample: %s line %d, %s: '%s' -> '%s'\n\n" %
                (self.num, self.path, self.line, self.op, " ".join(self.before.split()),
                 " ".join(self.after.split())))
        if tests:
            head += "Tests: %s\n\n" % " ".join(tests)
        return head + "".join(diff)


def sample(args):
    rng = random.Random(args.seed)
    candidates = []
    for path in library_sources(args.folders):
        src = open(os.path.join(ROOT, path)).read()
        for s in sites(path, src, rng):
            candidates.append((path,) + s)
    # stratified: each operator gets its share of --count (QUOTA), drawn from its sites
    picked = []
    for op, share in QUOTA:
        of_op = [k for k, c in enumerate(candidates) if c[2] == op]
        want = min(len(of_op), round(args.count * share / sum(q for _, q in QUOTA)))
        picked += rng.sample(of_op, want)
    picked.sort()
    mutants = []
    for num, k in enumerate(picked, 1):
        path, line, op, start, end, repl = candidates[k]
        mutants.append(Mutant(num, path, line, op, start, end, repl,
                              open(os.path.join(ROOT, path)).read()))
    return mutants, len(candidates)


def coverage_map(mutants):
    """{(file, line): [test binaries executing it]} from make coverage's per-test gcovr JSON, or
    None when there is none or a sampled source is newer than it."""
    cdir = os.path.join(ROOT, os.environ.get("BUILD_COV", "build-cov"), "coverage", "per-test")
    if not os.path.isdir(cdir):
        return None
    traces = [os.path.join(cdir, f) for f in sorted(os.listdir(cdir)) if f.endswith(".json")]
    if not traces:
        return None
    oldest = min(os.path.getmtime(t) for t in traces)
    stale = [m.path for m in mutants if os.path.getmtime(os.path.join(ROOT, m.path)) > oldest]
    if stale:
        print("mutation-sample: %s is newer than make coverage's counters: every test binary "
              "runs every mutant" % stale[0], file=sys.stderr)
        return None
    import json
    # test binaries make coverage has not measured (added since) run every mutant
    measured = {os.path.basename(t)[:-5] for t in traces}
    unmeasured = sorted(f[:-2] for f in os.listdir(os.path.join(ROOT, "tests"))
                        if f.startswith("test_") and f.endswith(".c") and f[:-2] not in measured)
    cmap = {}
    for t in traces:
        name = os.path.basename(t)[:-5]
        for entry in json.load(open(t))["files"]:
            path = os.path.relpath(os.path.join(ROOT, entry["file"]), ROOT)
            for line in entry["lines"]:
                if line.get("gcovr/noncode"):
                    continue
                tests = cmap.setdefault((path, line["line_number"]), [])
                if line["count"] > 0:
                    tests.append(name)
    for tests in cmap.values():
        if tests:
            tests += unmeasured
    return cmap


def executed_by(cmap, m):
    """The test binaries executing mutant m's lines; a line gcov has no record of (the second
    line of a statement) counts as the nearest line above it that has one."""
    tests = set()
    for ln in m.lines():
        while ln > 0 and (m.path, ln) not in cmap:
            ln -= 1
        tests.update(cmap.get((m.path, ln), []))
    return sorted(tests)


def compile_error(m):
    """The compiler's first error on mutant m's file (a syntax check, nothing built), or ""."""
    src = open(os.path.join(ROOT, m.path)).read()
    res = subprocess.run(["cc", "-std=gnu11", "-fsyntax-only", "-I.", "-iquote",
                          os.path.dirname(m.path), "-x", "c", "-"], cwd=ROOT,
                         input=src[:m.start] + m.repl + src[m.end:], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if res.returncode == 0:
        return ""
    errors = [x for x in res.stdout.splitlines() if "error" in x]
    return (errors[0] if errors else "exit %d" % res.returncode).replace("<stdin>", m.path)


class Triage:
    """The lines of a triage file (`ID | reason`). An ID may itself hold " | " (an operator
    of the mutated text), so a line belongs to the mutant whose ID it starts with."""

    def __init__(self, path):
        self.lines = []
        if os.path.exists(path):
            self.lines = [x.strip() for x in open(path)
                          if x.strip() and not x.startswith("#")]

    def get(self, ident):
        for line in self.lines:
            if line.startswith(ident + " | "):
                return line[len(ident) + 3:].strip()
        return None


def parse_logs(logs):
    """{mutant name: (verdict, detail)} from mutation.sh's lines; a later log wins."""
    verdicts = {}
    pat = re.compile(r"^(CAUGHT|SURVIVED|NO BUILD|STALE)\s+(\d{3}-\S+?)(?:\.patch)?[: ](.*)$")
    for log in logs:
        for line in open(log, errors="replace"):
            m = pat.match(line.rstrip("\n"))
            if m:
                verdicts[m.group(2)] = (m.group(1), m.group(3).strip())
    return verdicts


def report(mutants, n_candidates, verdicts, args):
    eq = Triage(EQUIVALENT_FILE)
    notes = Triage(NOTES_FILE)
    files, rows, survivors, equivalents = {}, [], [], []
    tot = dict(killed=0, survived=0, equivalent=0, stillborn=0, pending=0)
    for m in mutants:
        v = verdicts.get(m.name, ("PENDING", ""))[0]
        kind = {"CAUGHT": "killed", "SURVIVED": "survived", "NO BUILD": "stillborn",
                "STALE": "stillborn", "PENDING": "pending"}[v]
        if kind == "survived" and eq.get(m.ident()) is not None:
            kind = "equivalent"
            equivalents.append((m, eq.get(m.ident())))
        elif kind == "survived":
            survivors.append(m)
        f = files.setdefault(m.path, dict(killed=0, survived=0, equivalent=0, stillborn=0,
                                          pending=0))
        f[kind] += 1
        tot[kind] += 1
    score = lambda d: (100.0 * d["killed"] / (d["killed"] + d["survived"])
                       if d["killed"] + d["survived"] else 100.0)
    out = []
    out.append("# make mutation-sample: seed %d, %d mutants of %d sites (%s)\n" %
               (args.seed, len(mutants), n_candidates, ", ".join(args.folders)))
    out.append("Written by `scripts/mutation-sample.py --report` from the logs of its runs (a later "
               "verdict wins: survivors were run again after their tests were written). Killed: "
               "a test binary of MUTATION_TESTS failed or passed its deadline; stillborn: the "
               "mutant does not compile; equivalent: listed in tests/mutation-sample/"
               "equivalent.txt with the reason it cannot change behaviour. Survivors left carry "
               "the reason from tests/mutation-sample/survivors.txt. "
               "Score = killed / (sampled - stillborn - equivalent - pending).\n")
    out.append("| file | killed | survived | equivalent | stillborn | pending | score |")
    out.append("|---|---|---|---|---|---|---|")
    for path in sorted(files):
        d = files[path]
        out.append("| %s | %d | %d | %d | %d | %d | %.0f%% |" % (
            path, d["killed"], d["survived"], d["equivalent"], d["stillborn"], d["pending"],
            score(d)))
    out.append("| **all** | %d | %d | %d | %d | %d | **%.1f%%** |" % (
        tot["killed"], tot["survived"], tot["equivalent"], tot["stillborn"], tot["pending"],
        score(tot)))
    ops = {}
    for m in mutants:
        ops[m.op] = ops.get(m.op, 0) + 1
    out.append("\nOperators sampled: " + ", ".join("%s %d" % kv for kv in sorted(ops.items())))
    out.append("\n## Survivors (%d)\n" % len(survivors))
    for m in survivors:
        out.append("- %s:%d `%s` (mutant %d, %s)%s" % (m.path, m.line, " ".join(
            (m.before + " -> " + m.after).split())[:140], m.num, m.op,
            ": " + notes.get(m.ident()) if notes.get(m.ident()) else ""))
    out.append("\n## Equivalent (%d)\n" % len(equivalents))
    for m, reason in equivalents:
        out.append("- %s:%d `%s` (mutant %d): %s" % (m.path, m.line, " ".join(
            (m.before + " -> " + m.after).split())[:140], m.num, reason))
    text = "\n".join(out) + "\n"
    print(text)
    print("mutation-sample score: %d/%d killed (%.1f%%; %d equivalent, %d stillborn, %d pending)"
          % (tot["killed"], tot["killed"] + tot["survived"], score(tot), tot["equivalent"],
             tot["stillborn"], tot["pending"]))
    if args.write:
        open(args.write, "w").write(text)
    return score(tot)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--folders", default=",".join(DEFAULT_FOLDERS))
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--target", type=float, default=80.0)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--only", nargs="+", type=int)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--write")
    args = ap.parse_args()
    args.folders = args.folders.split(",")
    build = os.environ.get("BUILD", "build")
    outdir = os.path.join(ROOT, build, "mutation-sample")
    mutants, n_candidates = sample(args)
    if args.list:
        for m in mutants:
            print("%s  %s" % (m.name, m.ident()))
        print("%d mutants of %d sites" % (len(mutants), n_candidates))
        return 0
    logs = sorted((os.path.join(outdir, f) for f in os.listdir(outdir) if f.startswith("log-"))
                  if os.path.isdir(outdir) else [], key=os.path.getmtime)
    if args.report:
        return 0 if report(mutants, n_candidates, parse_logs(logs), args) >= args.target else 1
    patchdir = os.path.join(outdir, "patches")
    os.makedirs(patchdir, exist_ok=True)
    for old in os.listdir(patchdir):
        os.remove(os.path.join(patchdir, old))
    done = parse_logs(logs) if args.resume else {}
    chosen = [m for m in mutants if (not args.only or m.num in args.only) and m.name not in done]
    cmap = coverage_map(chosen)
    paths, unexecuted = [], []
    for m in chosen:
        tests = None
        if cmap is not None:
            tests = executed_by(cmap, m)
            if not tests:
                unexecuted.append(m)
                continue
        p = os.path.join(patchdir, m.name + ".patch")
        open(p, "w").write(m.patch(open(os.path.join(ROOT, m.path)).read(), tests))
        paths.append(p)
    log = os.path.join(outdir, "log-" + time.strftime("%Y%m%d-%H%M%S"))
    env = dict(os.environ, BUILD=build, MUTATION_TIMEOUT=str(args.timeout))
    print("mutation-sample: %d mutants (seed %d), log %s" % (len(paths), args.seed, log),
          flush=True)
    with open(log, "w") as lf:
        for m in unexecuted:
            err = compile_error(m)
            if err:
                lf.write("NO BUILD  %s: %s\n" % (m.name, err))
            else:
                lf.write("SURVIVED  %s (0 s) no test binary executes line %d\n" % (m.name, m.line))
        lf.flush()
        proc = subprocess.Popen([os.path.join(ROOT, "scripts", "mutation.sh")] + paths,
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            lf.write(line)
            lf.flush()
            sys.stdout.write(line)
            sys.stdout.flush()
        proc.wait()
    if proc.returncode == 2:
        print("mutation-sample: scripts/mutation.sh could not set up (exit 2)", file=sys.stderr)
        return 2
    return 0 if report(mutants, n_candidates, parse_logs(logs + [log]), args) >= args.target \
        else 1


if __name__ == "__main__":
    sys.exit(main())
