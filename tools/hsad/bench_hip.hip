// hsad-bench-hip - the HIP side of `hsad bench`, on the same device as the other paths.
//
//   hsad-bench-hip --serve        a coprocess: reads one command per line on stdin, answers one
//                                 line "@bench ok V..." or "@bench err REASON" on stdout, so
//                                 hsad bench interleaves HIP with its own paths round by round
//   hsad-bench-hip --callgrind N  N launches between CALLGRIND_START/STOP_INSTRUMENTATION
//   hsad-bench-hip --callgrind-devmalloc N  N x (hipMalloc + hipFree) of 4 KiB, the same way
//                                 (hsad bench counts instructions inside bench_hip_submit)
//
// Commands (times from CLOCK_MONOTONIC; medians are over the repetitions of one command):
//   dispatch N          N hipLaunchKernelGGL of an empty kernel on the null stream, then a
//                       device synchronize (untimed): "ok NS_PER_LAUNCH"
//   roundtrip N         N x (launch + hipStreamSynchronize): "ok TOTAL_US SUBMIT_US" (medians)
//   producers T S N     T threads launching N launches in all (N/T each) into one stream (S=1)
//                       or a stream each (S=0): "ok NS_PER_SUBMIT SUBMITS_PER_S"
//   fanin K N           K streams each launch + hipEventRecord; another stream waits for the K
//                       events (hipStreamWaitEvent) and launches; synchronize; N times:
//                       "ok SUBMIT_US LATENCY_US" (submit: the K waits; latency: waits to sync)
//   crossq N            launch on s1 + hipEventRecord, hipStreamWaitEvent(s2), launch on s2,
//                       synchronize s2; N times: "ok SUBMIT_US LATENCY_US" (submit: record +
//                       wait; latency: first launch to synchronize returning)
//   memcpy BYTES N P    N x (hipMemcpyAsync host -> device of BYTES + hipStreamSynchronize) from
//                       hipHostMalloc'd (P=1) or malloc'd, touched (P=0) memory: "ok US" (median)
//   hostmalloc BYTES N  N x (hipHostMalloc + hipHostFree) of BYTES: "ok NS" (mean per pair)
//   devmalloc BYTES N   N x (hipMalloc + hipFree) of BYTES: "ok NS hipMalloc"
//   graph SHAPE MODE N  N launches of graph SHAPE (bench_graph_shape.h: chain10, dag100, diamond,
//                       chain100)
//                       as MODE graph (hipGraphLaunch of an exec instantiated at first use) or
//                       stream (hipLaunchKernelGGL per node on two streams, hipEventRecord +
//                       hipStreamWaitEvent for edges across them), each from reset buffers and
//                       checked: "ok LAUNCH_NS WAIT_NS VIOLATED BAD_LAUNCHES N INSTANTIATE_US"
//                       (medians; VIOLATED summed over the launches; graph: one
//                       hipGraphInstantiate timed per command, else 0)
//   quit
//
//   hsad-bench-hip --callgrind-graph N  for every graph: N graph launches, N stream launches,
//                       N hipGraphExecKernelNodeSetParams of the last node, one instantiate,
//                       dumped as "<graph> launch|dispatch|update|instantiate" parts
//                       (collected in bench_hip_graph_launch, bench_hip_stream_launch,
//                       bench_hip_graph_update, bench_hip_graph_instantiate)
// Built with hipcc for gfx90a (kfd-emu's default device); -rdynamic exports the kfd-emu twin of
// the kernel below, so the emulated GPU can complete it.
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "tools/hsad/bench_graph_shape.h"
#include "tools/kfd-emu/kfd_emu_twin.h"

#include <algorithm>
#include <thread>
#include <vector>

extern "C" __global__ void hsad_bench_empty(void) {}

// kfd-emu host twin (kfd_emu_twin.h's signature; nothing to do for an empty kernel).
extern "C" __attribute__((visibility("default"))) int kfd_emu_twin_hsad_bench_empty(const void *,
                                                                                    const void *) {
  return 0;
}

// order_record (kernels/order_record.cl): the ticket of a graph node.
extern "C" __global__ void hsad_bench_order_record(unsigned *counter, unsigned *slots,
                                                   unsigned index) {
  if (threadIdx.x == 0 && blockIdx.x == 0) slots[index] = atomicAdd(counter, 1u);
}

// Its twin: arguments at the offsets the metadata declares; a fault for memory the GPU cannot
// reach, as the kernel would.
KFD_EMU_TWIN(hsad_bench_order_record) {
  uint32_t *counter, *slots, index;
  if (kfd_emu_arg(d, 0, &counter, sizeof counter) || kfd_emu_arg(d, 1, &slots, sizeof slots) ||
      kfd_emu_arg(d, 2, &index, sizeof index))
    return 1;
  if (wg->base[0] || wg->base[1] || wg->base[2]) return 0;
  if (!d->gpu_accessible(counter, 4) || !d->gpu_accessible(slots + index, 4)) return 1;
  slots[index] = __atomic_fetch_add(counter, 1u, __ATOMIC_SEQ_CST);
  return 0;
}

extern "C" __attribute__((noinline)) void bench_hip_submit(void) {
  hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, 0);
}

static void launch_on(hipStream_t s) { hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, s); }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double median(std::vector<double> &v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAXS 21
static hipStream_t streams[MAXS];
static hipEvent_t events[MAXS];

static bool check(hipError_t e, const char *what) {
  if (e == hipSuccess) return true;
  printf("@bench err %s: %s\n", what, hipGetErrorString(e));
  return false;
}

static void cmd_dispatch(unsigned n) {
  double t0 = now_ns();
  for (unsigned i = 0; i < n; i++) bench_hip_submit();
  double t = now_ns() - t0;
  if (check(hipDeviceSynchronize(), "hipDeviceSynchronize")) printf("@bench ok %.1f\n", t / n);
}

static void cmd_roundtrip(unsigned n) {
  std::vector<double> tot, sub;
  for (unsigned i = 0; i < n; i++) {
    double t0 = now_ns();
    launch_on(0);
    double t1 = now_ns();
    if (!check(hipStreamSynchronize(0), "hipStreamSynchronize")) return;
    double t2 = now_ns();
    tot.push_back((t2 - t0) / 1e3);
    sub.push_back((t1 - t0) / 1e3);
  }
  printf("@bench ok %.3f %.3f\n", median(tot), median(sub));
}

static void cmd_producers(unsigned threads, unsigned shared, unsigned n) {
  unsigned each = n / threads;
  std::vector<double> per(threads);
  std::vector<std::thread> th;
  volatile int go = 0;
  double t0 = 0;
  for (unsigned t = 0; t < threads; t++)
    th.emplace_back([&, t]() {
      hipStream_t s = shared ? streams[0] : streams[t];
      while (!go) {
      }
      double a = now_ns();
      for (unsigned i = 0; i < each; i++) launch_on(s);
      per[t] = (now_ns() - a) / each;
    });
  t0 = now_ns();
  go = 1;
  for (auto &x : th) x.join();
  double wall = now_ns() - t0;
  if (!check(hipDeviceSynchronize(), "hipDeviceSynchronize")) return;
  double mean = 0;
  for (double x : per) mean += x / threads;
  printf("@bench ok %.1f %.0f\n", mean, (double)each * threads / (wall / 1e9));
}

static void cmd_fanin(unsigned k, unsigned n) {
  std::vector<double> sub, lat;
  hipStream_t b = streams[MAXS - 1];
  for (unsigned r = 0; r < n; r++) {
    for (unsigned i = 0; i < k; i++) {
      launch_on(streams[i]);
      if (!check(hipEventRecord(events[i], streams[i]), "hipEventRecord")) return;
    }
    double t0 = now_ns();
    for (unsigned i = 0; i < k; i++)
      if (!check(hipStreamWaitEvent(b, events[i], 0), "hipStreamWaitEvent")) return;
    double t1 = now_ns();
    launch_on(b);
    if (!check(hipStreamSynchronize(b), "hipStreamSynchronize")) return;
    double t2 = now_ns();
    sub.push_back((t1 - t0) / 1e3);
    lat.push_back((t2 - t0) / 1e3);
  }
  if (!check(hipDeviceSynchronize(), "hipDeviceSynchronize")) return;
  printf("@bench ok %.3f %.3f\n", median(sub), median(lat));
}

static void cmd_crossq(unsigned n) {
  std::vector<double> sub, lat;
  for (unsigned r = 0; r < n; r++) {
    double t0 = now_ns();
    launch_on(streams[0]);
    double t1 = now_ns();
    if (!check(hipEventRecord(events[0], streams[0]), "hipEventRecord")) return;
    if (!check(hipStreamWaitEvent(streams[1], events[0], 0), "hipStreamWaitEvent")) return;
    double t2 = now_ns();
    launch_on(streams[1]);
    if (!check(hipStreamSynchronize(streams[1]), "hipStreamSynchronize")) return;
    double t3 = now_ns();
    sub.push_back((t2 - t1) / 1e3);
    lat.push_back((t3 - t0) / 1e3);
  }
  printf("@bench ok %.3f %.3f\n", median(sub), median(lat));
}

static void cmd_memcpy(size_t bytes, unsigned n, unsigned pinned) {
  void *src = NULL, *dst = NULL;
  if (pinned) {
    if (!check(hipHostMalloc(&src, bytes, 0), "hipHostMalloc")) return;
  } else if (!(src = malloc(bytes))) {
    printf("@bench err malloc(%zu) failed\n", bytes);
    return;
  }
  memset(src, 1, bytes);
  std::vector<double> us;
  bool ok = check(hipMalloc(&dst, bytes), "hipMalloc");
  for (unsigned i = 0; ok && i < n; i++) {
    double t0 = now_ns();
    ok = check(hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, streams[0]), "hipMemcpyAsync") &&
         check(hipStreamSynchronize(streams[0]), "hipStreamSynchronize");
    us.push_back((now_ns() - t0) / 1e3);
  }
  if (dst) hipFree(dst);
  if (pinned) hipHostFree(src);
  else free(src);
  if (ok) printf("@bench ok %.3f\n", median(us));
}

static void cmd_hostmalloc(size_t bytes, unsigned n) {
  double t0 = now_ns();
  for (unsigned i = 0; i < n; i++) {
    void *p = NULL;
    if (!check(hipHostMalloc(&p, bytes, 0), "hipHostMalloc") || !check(hipHostFree(p), "hipHostFree"))
      return;
  }
  printf("@bench ok %.1f\n", (now_ns() - t0) / n);
}

// N x (hipMalloc + hipFree) of device memory: mean ns per pair. Not hipMallocAsync: HIP
// 5.2.3 declares it, but on kfd-emu its first call never returned (no reply in 25 s), so the
// stream-ordered row is measured against the synchronous pair (issue 21's fallback).
static void cmd_devmalloc(size_t bytes, unsigned n) {
  double t0 = now_ns();
  for (unsigned i = 0; i < n; i++) {
    void *p = NULL;
    if (!check(hipMalloc(&p, bytes), "hipMalloc") || !check(hipFree(p), "hipFree")) return;
  }
  printf("@bench ok %.1f hipMalloc\n", (now_ns() - t0) / n);
}

// ---- graphs (bench_graph_shape.h) ----------------------------------------------------------
struct hshape {
  bg_shape_t sh;
  unsigned *counter, *slots; // hipHostMalloc: the host resets and checks them
  unsigned index[BG_MAX_NODES];
  void *args[BG_MAX_NODES][3];
  hipKernelNodeParams params[BG_MAX_NODES];
  hipGraphNode_t node[BG_MAX_NODES];
  hipEvent_t ev[BG_MAX_NODES]; // recorded after a node with a consumer on the other stream
  bool cross[BG_MAX_NODES];
  hipGraph_t graph;
  hipGraphExec_t exec;
  bool open;
};
static hshape shapes[BG_NSHAPES];

static hshape *shape_open(const char *name) {
  int gi = 0;
  while (gi < BG_NSHAPES && strcmp(bg_shape_names[gi], name)) gi++;
  if (gi == BG_NSHAPES) {
    printf("@bench err unknown graph '%s'\n", name);
    return NULL;
  }
  hshape *h = &shapes[gi];
  if (h->open) return h;
  bg_shape_build(name, &h->sh);
  if (!check(hipHostMalloc((void **)&h->counter, 64, 0), "hipHostMalloc") ||
      !check(hipHostMalloc((void **)&h->slots, BG_MAX_NODES * 4, 0), "hipHostMalloc") ||
      !check(hipGraphCreate(&h->graph, 0), "hipGraphCreate"))
    return NULL;
  for (unsigned i = 0; i < h->sh.nodes; i++) {
    h->index[i] = i;
    h->args[i][0] = &h->counter;
    h->args[i][1] = &h->slots;
    h->args[i][2] = &h->index[i];
    hipKernelNodeParams &p = h->params[i];
    memset(&p, 0, sizeof p);
    p.blockDim = dim3(1);
    p.gridDim = dim3(1);
    p.func = (void *)hsad_bench_order_record;
    p.kernelParams = h->args[i];
    hipGraphNode_t deps[BG_MAX_DEPS];
    for (unsigned d = 0; d < h->sh.ndeps[i]; d++) deps[d] = h->node[h->sh.dep[i][d]];
    h->cross[i] = bg_cross_consumed(&h->sh, i);
    if (!check(hipGraphAddKernelNode(&h->node[i], h->graph, deps, h->sh.ndeps[i], &p),
               "hipGraphAddKernelNode") ||
        !check(hipEventCreateWithFlags(&h->ev[i], hipEventDisableTiming), "hipEventCreate"))
      return NULL;
  }
  if (!check(hipGraphInstantiate(&h->exec, h->graph, NULL, NULL, 0), "hipGraphInstantiate"))
    return NULL;
  h->open = true;
  return h;
}

extern "C" __attribute__((noinline)) hipError_t bench_hip_graph_launch(hshape *h) {
  return hipGraphLaunch(h->exec, streams[0]);
}

extern "C" __attribute__((noinline)) hipError_t bench_hip_stream_launch(hshape *h) {
  hipError_t e = hipSuccess;
  for (unsigned i = 0; i < h->sh.nodes && e == hipSuccess; i++) {
    hipStream_t s = streams[h->sh.lane[i]];
    for (unsigned d = 0; d < h->sh.ndeps[i] && e == hipSuccess; d++) {
      unsigned from = h->sh.dep[i][d];
      if (h->sh.lane[from] != h->sh.lane[i]) e = hipStreamWaitEvent(s, h->ev[from], 0);
    }
    hipLaunchKernelGGL(hsad_bench_order_record, dim3(1), dim3(1), 0, s, h->counter, h->slots, i);
    if (e == hipSuccess) e = hipGetLastError();
    if (e == hipSuccess && h->cross[i]) e = hipEventRecord(h->ev[i], s);
  }
  return e;
}

extern "C" __attribute__((noinline)) hipError_t bench_hip_graph_update(hshape *h, unsigned node) {
  return hipGraphExecKernelNodeSetParams(h->exec, h->node[node], &h->params[node]);
}

extern "C" __attribute__((noinline)) hipError_t bench_hip_graph_instantiate(hshape *h,
                                                                            hipGraphExec_t *x) {
  return hipGraphInstantiate(x, h->graph, NULL, NULL, 0);
}

// One launch from reset buffers, waited for and checked; false after an error (printed).
static bool graph_once(hshape *h, bool graph, double *launch, double *wait, unsigned *bad) {
  *h->counter = 0;
  memset(h->slots, 0xff, BG_MAX_NODES * 4);
  double t0 = now_ns();
  hipError_t e = graph ? bench_hip_graph_launch(h) : bench_hip_stream_launch(h);
  double t1 = now_ns();
  if (!check(e, graph ? "hipGraphLaunch" : "stream launch")) return false;
  if (!check(hipStreamSynchronize(streams[0]), "hipStreamSynchronize") ||
      !check(hipStreamSynchronize(streams[1]), "hipStreamSynchronize"))
    return false;
  double t2 = now_ns();
  *launch = t1 - t0;
  *wait = t2 - t0;
  *bad = bg_check(&h->sh, h->slots, *h->counter);
  return true;
}

static void cmd_graph(const char *name, const char *mode, unsigned n) {
  hshape *h = shape_open(name);
  if (!h) return;
  bool graph = !strcmp(mode, "graph");
  std::vector<double> la, wa;
  unsigned bad = 0, bad_launches = 0;
  for (unsigned i = 0; i < n; i++) {
    double l, w;
    unsigned b;
    if (!graph_once(h, graph, &l, &w, &b)) return;
    la.push_back(l);
    wa.push_back(w);
    bad += b;
    bad_launches += b != 0;
  }
  double inst_us = 0;
  if (graph) {
    hipGraphExec_t x;
    double t0 = now_ns();
    if (!check(bench_hip_graph_instantiate(h, &x), "hipGraphInstantiate")) return;
    inst_us = (now_ns() - t0) / 1e3;
    hipGraphExecDestroy(x);
  }
  printf("@bench ok %.1f %.1f %u %u %u %.3f\n", median(la), median(wa), bad, bad_launches, n,
         inst_us);
}

static int callgrind_graph(unsigned n) {
  hshape *h[BG_NSHAPES];
  for (int gi = 0; gi < BG_NSHAPES; gi++)
    if (!(h[gi] = shape_open(bg_shape_names[gi]))) return 1;
  double l, w;
  unsigned bad;
  for (int gi = 0; gi < BG_NSHAPES; gi++) // warm: both paths, twice
    for (int k = 0; k < 4; k++)
      if (!graph_once(h[gi], k & 1, &l, &w, &bad)) return 1;
  printf("@bench stage measure\n");
  CALLGRIND_START_INSTRUMENTATION;
  for (int gi = 0; gi < BG_NSHAPES; gi++) {
    char label[64];
    for (int graph = 1; graph >= 0; graph--) {
      for (unsigned i = 0; i < n; i++)
        if (!graph_once(h[gi], graph, &l, &w, &bad)) return 1;
      snprintf(label, sizeof label, "%s %s", bg_shape_names[gi], graph ? "launch" : "dispatch");
      CALLGRIND_DUMP_STATS_AT(label);
    }
    unsigned last = h[gi]->sh.nodes - 1;
    for (unsigned i = 0; i < n; i++)
      if (!check(bench_hip_graph_update(h[gi], last), "hipGraphExecKernelNodeSetParams")) return 1;
    snprintf(label, sizeof label, "%s update", bg_shape_names[gi]);
    CALLGRIND_DUMP_STATS_AT(label);
    hipGraphExec_t x;
    if (!check(bench_hip_graph_instantiate(h[gi], &x), "hipGraphInstantiate")) return 1;
    snprintf(label, sizeof label, "%s instantiate", bg_shape_names[gi]);
    CALLGRIND_DUMP_STATS_AT(label);
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  return 0;
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (hipSetDevice(0) != hipSuccess || hipFree(0) != hipSuccess) {
    printf("@bench err no HIP device\n");
    return 1;
  }
  // first launch (outside the measurements: it loads the code object)
  hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, 0);
  if (!check(hipDeviceSynchronize(), "first launch")) return 1;
  if (argc == 3 && !strcmp(argv[1], "--callgrind-devmalloc")) {
    unsigned n = (unsigned)strtoul(argv[2], NULL, 10);
    void *p = NULL;
    if (!check(hipMalloc(&p, 4096), "hipMalloc") || !check(hipFree(p), "hipFree")) return 1;
    printf("@bench stage measure\n");
    CALLGRIND_START_INSTRUMENTATION;
    for (unsigned i = 0; i < n; i++)
      if (hipMalloc(&p, 4096) != hipSuccess || hipFree(p) != hipSuccess) break;
    CALLGRIND_STOP_INSTRUMENTATION;
    printf("@bench done\n");
    fflush(stdout);
    _exit(0); // no runtime teardown under valgrind
  }
  if (argc == 3 && !strcmp(argv[1], "--callgrind")) {
    unsigned n = (unsigned)strtoul(argv[2], NULL, 10);
    printf("@bench stage measure\n");
    CALLGRIND_START_INSTRUMENTATION;
    for (unsigned i = 0; i < n; i++) bench_hip_submit();
    CALLGRIND_STOP_INSTRUMENTATION;
    hipDeviceSynchronize();
    printf("@bench done\n");
    fflush(stdout);
    _exit(0); // no runtime teardown under valgrind
  }
  for (int i = 0; i < MAXS; i++)
    if (!check(hipStreamCreateWithFlags(&streams[i], hipStreamNonBlocking), "hipStreamCreate") ||
        !check(hipEventCreateWithFlags(&events[i], hipEventDisableTiming), "hipEventCreate"))
      return 1;
  if (argc == 3 && !strcmp(argv[1], "--callgrind-graph")) {
    int rc = callgrind_graph((unsigned)strtoul(argv[2], NULL, 10));
    printf(rc ? "@bench err graph callgrind run failed\n" : "@bench done\n");
    fflush(stdout);
    _exit(rc); // no runtime teardown under valgrind
  }
  if (argc != 2 || strcmp(argv[1], "--serve")) {
    fprintf(stderr, "usage: hsad-bench-hip --serve | --callgrind N | --callgrind-devmalloc N | "
                    "--callgrind-graph N\n");
    return 2;
  }
  printf("@bench ready\n");
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    unsigned a = 0, b = 0, c = 0;
    size_t z = 0;
    char shape[32], mode[16];
    if (sscanf(line, "dispatch %u", &a) == 1 && a) cmd_dispatch(a);
    else if (sscanf(line, "roundtrip %u", &a) == 1 && a) cmd_roundtrip(a);
    else if (sscanf(line, "producers %u %u %u", &a, &b, &c) == 3 && a && a < MAXS && c >= a)
      cmd_producers(a, b, c);
    else if (sscanf(line, "fanin %u %u", &a, &b) == 2 && a && a <= MAXS - 1 && b) cmd_fanin(a, b);
    else if (sscanf(line, "crossq %u", &a) == 1 && a) cmd_crossq(a);
    else if (sscanf(line, "memcpy %zu %u %u", &z, &a, &b) == 3 && z && a) cmd_memcpy(z, a, b);
    else if (sscanf(line, "hostmalloc %zu %u", &z, &a) == 2 && z && a) cmd_hostmalloc(z, a);
    else if (sscanf(line, "devmalloc %zu %u", &z, &a) == 2 && z && a) cmd_devmalloc(z, a);
    else if (sscanf(line, "graph %31s %15s %u", shape, mode, &a) == 3 && a &&
             (!strcmp(mode, "graph") || !strcmp(mode, "stream")))
      cmd_graph(shape, mode, a);
    else if (!strncmp(line, "quit", 4)) break;
    else printf("@bench err unknown command: %s", line);
  }
  fflush(stdout);
  _exit(0); // the parent waits for nothing of HIP's teardown
}
