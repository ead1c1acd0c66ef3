#!/usr/bin/env python3
"""nv-bench-table.py - README's NVIDIA tables from one hsad-bench-nvidia --json file (issue 22).

    scripts/nv-bench-table.py BENCH.jsonl [--label 'run 1']   # Markdown on stdout

Reads the JSON lines of one run (every suite: the first line "meta" names the device) and prints,
medians in ns (min..max over rounds where a table says so):
  1. the goals table: submit (empty, saxpy) against cuLaunchKernel / cuLaunchKernelEx /
     cudaLaunchKernel, launch + wait, the cross-queue trip, pool alloc + free (4 KiB, 1 MiB,
     64 MiB, with the worst round), 64 MiB copies pinned and pageable, the device times' cost,
     producers at 8 threads;
  2. graphs: launch, launch + wait, one node update, instantiate per shape;
  3. producers: 1-8 threads, one queue or a queue each, ns per submit and launches per second;
  4. pageable copies: every strategy per size and direction.
A suite absent from the file leaves its rows out (and says so under the tables). Python 3
standard library only (the lent H200 has no package registry). Exit 1 when the file holds no row.
"""
import json
import sys


def load(path):
    rows, meta = {}, {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                o = json.loads(line)
            except ValueError as e:
                sys.exit("nv-bench-table: %s:%d: not JSON: %s" % (path, n, e))
            if o.get("suite") == "meta":
                meta = o
                continue
            rows[(o["suite"], o["path"], o["kernel"])] = o
    return meta, rows


def ns(v):
    if v is None:
        return "-"
    return "{:,.1f}".format(v) if v < 100 else "{:,.0f}".format(v)


def times(v):
    return "{:,.0f}".format(v) if v >= 10 else "%.2f" % v


class Tables:
    def __init__(self, meta, rows):
        self.meta, self.rows, self.missing = meta, rows, set()

    def med(self, suite, path, kernel):
        r = self.rows.get((suite, path, kernel))
        if r is None:
            self.missing.add(suite)
            return None
        return r["median_ns"]

    def row(self, suite, path, kernel):
        return self.rows.get((suite, path, kernel))

    def have(self, suite):
        return any(k[0] == suite for k in self.rows)

    def goals(self):
        out = ["| goal | hsad | the CUDA idiom | ratio |", "|---|---|---|---|"]
        for k in ("empty", "saxpy"):
            if not self.have("dispatch"):
                break
            h = self.med("dispatch", "hsad", k)
            idioms = []
            for p in ("cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernel"):
                v = self.rows.get(("dispatch", p, k))
                if v:
                    idioms.append("%s %s" % (p, ns(v["median_ns"])))
            cu = self.med("dispatch", "cuLaunchKernel", k)
            out.append("| submit, %s kernel | %s ns | %s | %+.1f%% of cuLaunchKernel |" % (
                "empty" if k == "empty" else k, ns(h), "; ".join(idioms), (h / cu - 1) * 100))
        if self.have("roundtrip"):
            h = self.med("roundtrip", "hsad", "empty")
            s = self.med("roundtrip", "cuLaunch+Sync", "empty")
            e = self.med("roundtrip", "cuLaunch+EventSync", "empty")
            out.append("| launch + wait | %s ns | + cuStreamSynchronize %s; + cuEventRecord + "
                       "cuEventSynchronize %s | %.3fx / %.3fx faster |" % (ns(h), ns(s), ns(e), s / h, e / h))
        if self.have("barrier"):
            h = self.med("barrier", "hsad_queue_barrier", "trip")
            d = self.med("barrier", "EventRecord+WaitEvent", "trip")
            out.append("| cross-queue trip | %s ns | cuEventRecord + cuStreamWaitEvent %s | %.3fx faster |"
                       % (ns(h), ns(d), d / h))
        for z, name in (("4KiB", "4 KiB"), ("1MiB", "1 MiB"), ("64MiB", "64 MiB")):
            if not self.have("pool"):
                break
            h = self.med("pool", "hsad_host_pool", z)
            d = self.med("pool", "cuMemHostAlloc+Free", z)
            worst = self.row("pool", "ratio driver/hsad", z)
            w = worst["min_ns"] if worst else 0
            out.append("| pool alloc + free, %s | %s ns | cuMemHostAlloc + cuMemFreeHost %s ns | %sx; "
                       "worst round %sx |" % (name, ns(h), ns(d), times(d / h), times(w)))
        for kind, hp, dp in (("pinned", "hsad pinned(pool)", "cuMemcpy pinned"),
                             ("pageable", "hsad pageable", "cuMemcpy pageable")):
            if not self.have("copy"):
                break
            b = 64 << 20
            g = [b / self.med("copy", "%s %s" % (d, p), "64MiB") for p in (hp, dp) for d in ("H2D", "D2H")]
            out.append("| copy 64 MiB %s, H2D / D2H | %.1f / %.1f GB/s | cuMemcpy*Async + sync %.1f / %.1f "
                       "GB/s | %.3f / %.3f |" % (kind, g[0], g[1], g[2], g[3], g[0] / g[2], g[1] / g[3]))
        if self.have("timing"):
            a = self.med("timing", "dispatch+completion", "empty")
            p = self.med("timing", "profiling queue", "empty")
            out.append("| device times (profiling queue) | %s ns per timed dispatch | plain queue %s ns | "
                       "%+.0f ns |" % (ns(p), ns(a), p - a))
        if self.have("producers"):
            for cfg in ("shared", "each"):
                h = self.med("producers", "hsad queues=%s" % cfg, "T8")
                d = self.med("producers", "cuLaunchKernel queues=%s" % cfg, "T8")
                out.append("| 8 producers, %s | %s ns per submit | cuLaunchKernel from 8 threads %s | "
                           "%+.1f%% |" % ("one queue" if cfg == "shared" else "a queue each", ns(h), ns(d),
                                          (h / d - 1) * 100))
        return out

    def graph(self):
        out = ["| shape | hsad launch | cuGraphLaunch | hsad launch+wait | cuGraphLaunch+Sync | hsad update "
               "| cuGraphExecKernelNodeSetParams | hsad instantiate | cuGraphInstantiate (+ build) |",
               "|---|---|---|---|---|---|---|---|---|"]
        paths = ("hsad launch", "cuGraphLaunch", "hsad launch+wait", "cuGraphLaunch+Sync", "hsad update",
                 "cuGraphExecKernelNodeSetParams", "hsad instantiate", "cuGraphInstantiate")
        for shape, label in (("chain10", "chain10 (1 queue)"), ("dag100", "dag100 (2 queues)"),
                             ("forkjoin", "forkjoin (2 queues)")):
            out.append("| %s | %s |" % (label, " | ".join(ns(self.med("graph", p, shape)) for p in paths)))
        return out

    def producers(self):
        out = ["| threads | one queue: hsad | cuLaunchKernel | hsad / cu | launches/s hsad / cu "
               "| a queue each: hsad | cuLaunchKernel | hsad / cu | launches/s hsad / cu |",
               "|---|---|---|---|---|---|---|---|---|"]
        for t in (1, 2, 4, 8):
            cells = []
            for cfg in ("shared", "each"):
                h = self.med("producers", "hsad queues=%s" % cfg, "T%d" % t)
                d = self.med("producers", "cuLaunchKernel queues=%s" % cfg, "T%d" % t)
                hw = self.med("producers", "hsad queues=%s wall" % cfg, "T%d" % t)
                dw = self.med("producers", "cuLaunchKernel queues=%s wall" % cfg, "T%d" % t)
                cells += [ns(h), ns(d), "%.3f" % (h / d),
                          "{:,.0f} / {:,.0f}".format(1e9 / hw, 1e9 / dw)]
            out.append("| %d | %s |" % (t, " | ".join(cells)))
        return out

    def pageable(self):
        strat = ("driver", "hsad direct", "hsad staged", "hsad pinned", "hsad default")
        out = ["| size | " + " | ".join("H2D " + s for s in strat) + " | " +
               " | ".join("D2H " + s for s in strat) + " |", "|---" * 11 + "|"]
        for kib in (4, 64, 256, 1024, 4096, 16384, 65536):
            k = "%dKiB" % kib
            size = "%d KiB" % kib if kib < 1024 else "%d MiB" % (kib // 1024)
            out.append("| %s | %s |" % (size, " | ".join(
                ns(self.med("pageable", "%s %s" % (d, s), k)) for d in ("H2D", "D2H") for s in strat)))
        return out


def main(argv):
    args = [a for a in argv[1:]]
    label = None
    if "--label" in args:
        i = args.index("--label")
        if i + 1 >= len(args):
            sys.exit("nv-bench-table: --label needs a value")
        label = args[i + 1]
        del args[i:i + 2]
    if len(args) != 1 or args[0].startswith("-"):
        sys.exit("usage: nv-bench-table.py BENCH.jsonl [--label TEXT]")
    meta, rows = load(args[0])
    if not rows:
        print("nv-bench-table: %s holds no bench row" % args[0], file=sys.stderr)
        return 1
    t = Tables(meta, rows)
    head = "hsad-bench-nvidia"
    if meta:
        head += " on %s (%s), CUDA %s, driver %s; medians of %d rounds (count %d)" % (
            meta.get("device"), meta.get("arch"), meta.get("cuda"), meta.get("driver"),
            meta.get("rounds", 0), meta.get("count", 0))
    if label:
        head += "; " + label
    print(head + ":\n")
    for title, suite, fn in (("Goals", None, t.goals), ("Graphs (ns)", "graph", t.graph),
                             ("Producers (ns per submit, median)", "producers", t.producers),
                             ("Pageable copies (ns per copy)", "pageable", t.pageable)):
        if suite and not t.have(suite):
            t.missing.add(suite)
            continue
        try:
            lines = fn()
        except (TypeError, ZeroDivisionError):  # a row of the suite is missing from the file
            t.missing.add(suite or "dispatch")
            print("%s: incomplete in this file (a row is missing)\n" % title)
            continue
        print("%s:\n" % title)
        print("\n".join(lines))
        print()
    suites = ("dispatch", "roundtrip", "barrier", "pool", "copy", "pageable", "timing", "graph", "producers")
    absent = sorted(s for s in suites if not t.have(s))
    if absent:
        print("(not in this run: %s)" % ", ".join(absent))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
