#!/usr/bin/env python3
"""coverage.py - make coverage's run and report (issue 18): the library's lines and branches.

    scripts/coverage.py --build build-cov --emudir DIR --headers "common/hsad_status.h ..." TEST...

make coverage built the library in BUILD with --coverage -O0. This runs each test binary TEST
through scripts/run-tests.sh (the environment of make test) with its own counters
(GCOV_PREFIX=BUILD/coverage/per-test/NAME; the hsad processes a test starts write there too),
log in BUILD/coverage/tests.log, then gcovr over each binary's counters (per-test/NAME.json:
which binaries execute each line, read by make mutation-sample) and over all of them together,
for the library's folders only (common/, codeobj/, hsa-dispatch/, fusion/, memory/; headers
with inline code count as their folder's files). A failing test is reported; the report is
still written. Prints, per file and per folder and for the whole library: lines executed /
lines of code, branches taken / branches (gcov's branch arcs; unreachable ones left out, as
gcovr's --exclude-unreachable-branches does). Then the public functions: every hsad_* function
declared in the installed headers (--headers, the Makefile's HEADERS) that no test executed (0
calls in the gcov data), and those no test names (tests/*.c, *.cpp: reached only through
another function or the hsad command). Writes BUILD/coverage/coverage.json (gcovr's JSON),
BUILD/coverage/summary.json (the figures above) and BUILD/coverage/html/index.html.
Exit status 0 whatever the figures (a report, not a gate); 2 when gcovr fails.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

FOLDERS = ("common", "codeobj", "hsa-dispatch", "fusion", "memory")
TARGET_LINES, TARGET_BRANCHES = 90.0, 75.0


def gcovr(root, args):
    cmd = ["gcovr", "-r", root, "--exclude-unreachable-branches"] + args
    for folder in FOLDERS:
        cmd += ["--filter", re.escape(os.path.join(root, folder)) + "/"]
    res = subprocess.run(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout[-3000:] + res.stderr[-3000:])
        sys.exit("coverage.py: gcovr failed (exit %d): %s" % (res.returncode, " ".join(cmd)))


def run_tests(root, build, emudir, tests, outdir):
    """Runs each test binary with its own gcov counters; returns {name: per-test dir}."""
    objdir = os.path.join(build, "obj")
    strip = len([c for c in objdir.split("/") if c])
    dirs, passed, failed, failures = {}, 0, 0, []
    with open(os.path.join(outdir, "tests.log"), "w") as log:
        for test in tests:
            name = os.path.basename(test)
            pdir = os.path.join(outdir, "per-test", name)
            os.makedirs(pdir, exist_ok=True)
            env = dict(os.environ, GCOV_PREFIX=pdir, GCOV_PREFIX_STRIP=str(strip))
            res = subprocess.run([os.path.join(root, "scripts", "run-tests.sh"), emudir, test],
                                 cwd=root, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, errors="replace")
            log.write(res.stdout)
            m = re.search(r"^(\d+) passed, (\d+) failed$", res.stdout, re.M)
            passed += int(m.group(1)) if m else 0
            failed += int(m.group(2)) if m else 1
            failures += re.findall(r"\[FAIL\] \S+|no Criterion summary.*", res.stdout)
            # gcov reads each .gcda beside its .gcno
            for folder in FOLDERS:
                src = os.path.join(objdir, folder)
                for f in os.listdir(src) if os.path.isdir(src) else []:
                    if f.endswith(".gcno") and os.path.exists(
                            os.path.join(pdir, folder, f[:-5] + ".gcda")):
                        shutil.copy(os.path.join(src, f), os.path.join(pdir, folder, f))
            dirs[name] = pdir
    print("coverage: %d test binaries: %d passed, %d failed (log: %s)" %
          (len(tests), passed, failed, os.path.join(outdir, "tests.log")))
    for f in failures[:20]:
        print("  " + f)
    return dirs


def file_stats(entry):
    """(lines covered, lines, branches covered, branches) of one gcovr file entry."""
    lc = lt = bc = bt = 0
    for line in entry["lines"]:
        if line.get("gcovr/noncode") or line.get("gcovr/excluded"):
            continue
        lt += 1
        lc += line["count"] > 0
        for br in line["branches"]:
            if br.get("throw"):
                continue
            bt += 1
            bc += br["count"] > 0
    return lc, lt, bc, bt


def pct(covered, total):
    return 100.0 * covered / total if total else 100.0


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def public_functions(root, headers):
    """hsad_* functions declared in the installed headers: {name: header}."""
    names = {}
    decl = re.compile(r"(?<![\w(])(hsad_[a-z0-9_]+)\s*\(")
    for header in headers:
        if not os.path.basename(header).startswith("hsad"):
            continue   # kfd-emu's headers: the emulator's API, not the library's
        text = strip_comments(open(os.path.join(root, header)).read())
        text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)  # macros
        for stmt in re.split(r";", text):
            # a declaration statement at file scope: a return type, the name, its arguments
            if "typedef" in stmt:
                continue
            m = decl.search(stmt)
            if m and re.search(r"[\w*]\s+\**\s*" + m.group(1) + r"\s*\(", stmt):
                names.setdefault(m.group(1), header)
    return names


def test_sources(root):
    texts = []
    tests = os.path.join(root, "tests")
    for name in sorted(os.listdir(tests)):
        if name.endswith((".c", ".cpp", ".h")):
            texts.append(open(os.path.join(tests, name), errors="replace").read())
    return "\n".join(texts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-cov")
    ap.add_argument("--headers", required=True)
    ap.add_argument("--emudir", required=True)
    ap.add_argument("tests", nargs="+")
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    build = os.path.abspath(os.path.join(root, args.build))
    outdir = os.path.join(build, "coverage")
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(os.path.join(outdir, "html"))
    dirs = run_tests(root, build, os.path.abspath(args.emudir),
                     [os.path.abspath(t) for t in args.tests], outdir)
    traces = []
    for name, pdir in sorted(dirs.items()):
        if any(f.endswith(".gcda") for _, _, fs in os.walk(pdir) for f in fs):
            gcovr(root, [pdir, "--object-directory", pdir, "--json", pdir + ".json"])
            traces.append(pdir + ".json")
    out_json = os.path.join(outdir, "coverage.json")
    merged = []
    for t in traces:
        merged += ["--add-tracefile", t]
    gcovr(root, merged + ["--json", out_json, "--html-details",
                          os.path.join(outdir, "html", "index.html")])
    data = json.load(open(out_json))

    per_file, per_folder, funcs = {}, {f: [0, 0, 0, 0] for f in FOLDERS}, {}
    for entry in data["files"]:
        path = os.path.relpath(os.path.join(root, entry["file"]), root)
        folder = path.split("/")[0]
        if folder not in per_folder:
            continue
        st = file_stats(entry)
        per_file[path] = st
        per_folder[folder] = [a + b for a, b in zip(per_folder[folder], st)]
        for fn in entry["functions"]:
            funcs[fn["name"]] = funcs.get(fn["name"], 0) + fn["execution_count"]
    total = [sum(v[i] for v in per_folder.values()) for i in range(4)]

    print("%-32s %17s %17s" % ("file", "lines", "branches"))
    for folder in FOLDERS:
        for path in sorted(p for p in per_file if p.startswith(folder + "/")):
            lc, lt, bc, bt = per_file[path]
            print("%-32s %5.1f%% %4d/%-5d %5.1f%% %4d/%-5d" %
                  (path, pct(lc, lt), lc, lt, pct(bc, bt), bc, bt))
    print()
    for name, (lc, lt, bc, bt) in list(per_folder.items()) + [("library", total)]:
        print("%-32s %5.1f%% %4d/%-5d %5.1f%% %4d/%-5d" %
              (name + ("/" if name != "library" else ""), pct(lc, lt), lc, lt, pct(bc, bt), bc, bt))
    lines_pct, branches_pct = pct(total[0], total[1]), pct(total[2], total[3])
    print("library: lines %.1f%% (target %.0f%%: %s), branches %.1f%% (target %.0f%%: %s)" %
          (lines_pct, TARGET_LINES, "met" if lines_pct >= TARGET_LINES else "NOT met",
           branches_pct, TARGET_BRANCHES, "met" if branches_pct >= TARGET_BRANCHES else "NOT met"))

    public = public_functions(root, args.headers.split())
    tests = test_sources(root)
    never_run = sorted(n for n in public if funcs.get(n, 0) == 0)
    unnamed = sorted(n for n in public
                     if funcs.get(n, 0) > 0 and not re.search(r"\b%s\s*\(" % n, tests))
    print("\npublic functions: %d declared in the headers, %d executed by no test, "
          "%d executed but named in no test" % (len(public), len(never_run), len(unnamed)))
    for n in never_run:
        print("  not executed:  %s (%s)%s" % (n, public[n], "" if n in funcs else
                                                " [no gcov record: inline or not compiled]"))
    for n in unnamed:
        print("  not named:     %s (%s; %d calls through other code)" % (n, public[n], funcs[n]))

    summary = {
        "folders": {f: dict(zip(("lines_covered", "lines", "branches_covered", "branches"), v))
                    for f, v in per_folder.items()},
        "files": {p: dict(zip(("lines_covered", "lines", "branches_covered", "branches"), v))
                  for p, v in per_file.items()},
        "library": {"lines_percent": round(lines_pct, 1), "branches_percent": round(branches_pct, 1)},
        "public_functions": len(public), "not_executed": never_run, "not_named": unnamed,
    }
    json.dump(summary, open(os.path.join(outdir, "summary.json"), "w"), indent=1)
    print("\nreport: %s (html: %s)" % (os.path.join(outdir, "summary.json"),
                                       os.path.join(outdir, "html", "index.html")))


if __name__ == "__main__":
    main()
