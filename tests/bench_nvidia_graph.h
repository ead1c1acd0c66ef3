/* bench_nvidia_graph.h - hsad-bench-nvidia's graph suite (issue 22), included by bench_nvidia.c
 * after its report helpers. Three shapes, each recorded once as an hsad graph and built once
 * as a raw CUgraph of the same nodes and edges (cuGraphAddKernelNode_v2):
 *   chain10   10 kernel nodes in a chain on one queue;
 *   dag100    10 levels of 10 nodes over two queues (node j of a level on queue j % 2), each
 *             after nodes j and j + 1 (mod 10) of the level before;
 *   forkjoin  a root, 4 branches (queues 0, 1, 0, 1), a join on queue 0.
 * Every node is affine(x_i, 1, 1, 256) on a region of its own (x = x + 1), so after L launches
 * each region holds L: checked for both paths at the end. Per round:
 *   launch    host ns per launch, 100 launches in bursts of 10 with the queues drained
 *             between bursts (untimed: 100 back to back filled the driver's queue, and the
 *             device's throughput then bounded the figure, +-20% from run to run):
 *             hsad_graph_launch (no completion) against cuGraphLaunch of the raw exec on one
 *             stream (the floor of this path; hsad's two-queue exec also joins its second
 *             queue, nv_graph.c);
 *   trip      launch + wait, 100 per round: hsad with completions + hsad_completion_wait_all
 *             against cuGraphLaunch + cuStreamSynchronize;
 *   update    one kernel node's arguments, 2,000 per round, no launch between:
 *             hsad_graph_exec_update against cuGraphExecKernelNodeSetParams_v2 (prebuilt
 *             parameters), and the same driver call on hsad's own exec and node (what the
 *             driver costs there, hsad's part aside: nv_graph_exec_native);
 *   instantiate  20 per round: hsad_graph_instantiate + hsad_graph_exec_destroy against
 *             cuGraphCreate + the nodes + cuGraphInstantiateWithFlags + cuGraphExecDestroy +
 *             cuGraphDestroy (both build the CUgraph from the recorded nodes).
 * launch and update interleave the two sides burst by burst (block by block: 100 updates), the
 * side that goes first alternating, so drift in clock or load reaches both alike. */

enum { GB_MAXN = 100, GB_LAUNCHES = 100, GB_BURST = 10, GB_UPDATES = 2000, GB_UPDATE_BLOCK = 100,
       GB_INST = 20, GB_ELEMS = 256 };

typedef struct gb_shape {
  const char *name;
  uint32_t n;
  uint32_t lane[GB_MAXN];
  uint32_t ndeps[GB_MAXN], deps[GB_MAXN][4];
  uint32_t upd;                   /* the node the update rows change */
} gb_shape_t;

static void gb_shapes(gb_shape_t s[3]) {
  memset(s, 0, 3 * sizeof *s);
  s[0].name = "chain10";
  s[0].n = 10;
  for (uint32_t i = 1; i < 10; i++) s[0].ndeps[i] = 1, s[0].deps[i][0] = i - 1;
  s[0].upd = 5;
  s[1].name = "dag100";
  s[1].n = 100;
  for (uint32_t i = 0; i < 100; i++) {
    uint32_t lv = i / 10, j = i % 10;
    s[1].lane[i] = j % 2;
    if (lv) {
      s[1].ndeps[i] = 2;
      s[1].deps[i][0] = (lv - 1) * 10 + j;
      s[1].deps[i][1] = (lv - 1) * 10 + (j + 1) % 10;
    }
  }
  s[1].upd = 55;
  s[2].name = "forkjoin";
  s[2].n = 6;
  for (uint32_t i = 1; i <= 4; i++) s[2].lane[i] = (i + 1) % 2, s[2].ndeps[i] = 1;
  s[2].ndeps[5] = 4;
  for (uint32_t i = 0; i < 4; i++) s[2].deps[5][i] = i + 1;
  s[2].upd = 3;
}

typedef struct gb_node_args {
  unsigned *x;
  unsigned mul, add, n;
  void *ptrs[4];
  hsad_karg_t args[4];
  hsad_launch_t l;
} gb_node_args_t;

static void gb_args(gb_node_args_t *a, unsigned *x, unsigned add) {
  a->x = x, a->mul = 1, a->add = add, a->n = GB_ELEMS;
  a->ptrs[0] = &a->x, a->ptrs[1] = &a->mul, a->ptrs[2] = &a->add, a->ptrs[3] = &a->n;
  a->args[0] = (hsad_karg_t)HSAD_KARG_PTR(x);
  a->args[1] = (hsad_karg_t)HSAD_KARG_VAL(a->mul);
  a->args[2] = (hsad_karg_t)HSAD_KARG_VAL(a->add);
  a->args[3] = (hsad_karg_t)HSAD_KARG_VAL(a->n);
  a->l = (hsad_launch_t){.dims = 1, .grid = {GB_ELEMS, 1, 1}, .block = {GB_ELEMS, 1, 1},
                         .args = a->args, .arg_count = 4};
}

static nv_kernel_node_params_t gb_kparams(nv_function_t f, gb_node_args_t *a) {
  return (nv_kernel_node_params_t){.func = f, .grid_dim_x = 1, .grid_dim_y = 1, .grid_dim_z = 1,
                                   .block_dim_x = GB_ELEMS, .block_dim_y = 1, .block_dim_z = 1,
                                   .kernel_params = a->ptrs};
}

/* The raw CUgraph of shape s over regions x (region i: x + i * GB_ELEMS). */
static int gb_raw_build(const gb_shape_t *s, nv_function_t f, unsigned *x, nv_graph_t *out_g,
                        nv_graph_exec_t *out_x, nv_graph_node_t nodes[GB_MAXN]) {
  nv_graph_t g;
  DRV(nv_cu.graph_create(&g, 0));
  for (uint32_t i = 0; i < s->n; i++) {
    gb_node_args_t a;
    gb_args(&a, x + i * GB_ELEMS, 1);
    nv_kernel_node_params_t kp = gb_kparams(f, &a);
    nv_graph_node_t d[4];
    for (uint32_t k = 0; k < s->ndeps[i]; k++) d[k] = nodes[s->deps[i][k]];
    DRV(nv_cu.graph_add_kernel_node(&nodes[i], g, d, s->ndeps[i], &kp));
  }
  DRV(nv_cu.graph_instantiate(out_x, g, 0));
  *out_g = g;
  return 0;
}

static int gb_check(const char *shape, const char *path, const unsigned *x, uint32_t n,
                    unsigned want) {
  for (uint32_t i = 0; i < n * GB_ELEMS; i++)
    if (x[i] != want) {
      fprintf(stderr, "hsad-bench-nvidia: graph %s (%s): node %u element %u is %u, want %u "
              "(one per launch)\n", shape, path, i / GB_ELEMS, i % GB_ELEMS, x[i], want);
      return 1;
    }
  return 0;
}

/* ratio[shape][0]: launch hsad / raw (medians), [1]: update hsad / raw. */
static int suite_graph(hsad_device_t *dev, const hsad_device_kernel_t *kaff, int rounds,
                       double ratio[3][2]) {
  gb_shape_t shapes[3];
  gb_shapes(shapes);
  nv_function_t f = (nv_function_t)(uintptr_t)hsad_device_kernel_desc(kaff)->kernel_object;
  hsad_queue_t *qs[2];
  nv_stream_t stream;
  HS("hsad_queue_create", hsad_queue_create(dev, NULL, &qs[0]));
  HS("hsad_queue_create", hsad_queue_create(dev, NULL, &qs[1]));
  DRV(nv_cu.stream_create(&stream, NV_STREAM_NON_BLOCKING));
  for (int si = 0; si < 3; si++) {
    const gb_shape_t *s = &shapes[si];
    unsigned *xh, *xr;
    HS("hsad_buffer_alloc", hsad_buffer_alloc(dev, s->n * GB_ELEMS * 4, (void **)&xh));
    HS("hsad_buffer_alloc", hsad_buffer_alloc(dev, s->n * GB_ELEMS * 4, (void **)&xr));
    hsad_graph_t *g;
    HS("hsad_graph_create", hsad_graph_create(0, &g));
    for (uint32_t i = 0; i < s->n; i++) {
      gb_node_args_t a;
      gb_args(&a, xh + i * GB_ELEMS, 1);
      char nm[16];
      snprintf(nm, sizeof nm, "n%u", i);
      HS("hsad_graph_add_kernel", hsad_graph_add_kernel(g, nm, s->lane[i], kaff, &a.l, s->deps[i],
                                                        s->ndeps[i], NULL));
    }
    hsad_graph_exec_t *x;
    HS("hsad_graph_instantiate", hsad_graph_instantiate(g, qs, 2, &x));
    nv_graph_t rg;
    nv_graph_exec_t rx;
    nv_graph_node_t rn[GB_MAXN];
    if (gb_raw_build(s, f, xr, &rg, &rx, rn)) return 1;
    uint32_t nq = hsad_graph_exec_queue_count(x);
    double vl[2][MAXR], vt[2][MAXR], vu[3][MAXR], vi[2][MAXR];
    unsigned launches = 0;
    hsad_completion_t c[2];
    for (int round = 0; round < rounds; round++) {
      /* launch: bursts of GB_BURST, hsad's and the driver's interleaved burst by burst (which
       * side goes first alternates), every queue drained after each burst (untimed) */
      uint64_t t0, t1, host[2] = {0, 0};
      for (int b = 0; b < 2 * GB_LAUNCHES / GB_BURST; b++) {
        int raw = (b ^ round) & 1;
        t0 = hsad_now_ns();
        if (raw) {
          for (int i = 0; i < GB_BURST; i++) DRV(nv_cu.graph_launch(rx, stream));
        } else {
          for (int i = 0; i < GB_BURST; i++)
            HS("hsad_graph_launch", hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, NULL, NULL));
        }
        host[raw] += hsad_now_ns() - t0;
        DRV(nv_cu.stream_synchronize(stream));
        HS("wait idle", hsad_queue_wait_idle(qs[0], HSAD_DEADLINE_NEVER));
        HS("wait idle", hsad_queue_wait_idle(qs[1], HSAD_DEADLINE_NEVER));
      }
      vl[0][round] = (double)host[0] / GB_LAUNCHES;
      vl[1][round] = (double)host[1] / GB_LAUNCHES;
      t0 = hsad_now_ns();
      for (int i = 0; i < GB_LAUNCHES; i++) {
        HS("hsad_graph_launch", hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, c, NULL));
        HS("wait", hsad_completion_wait_all(c, nq, HSAD_DEADLINE_NEVER));
      }
      t1 = hsad_now_ns();
      for (int i = 0; i < GB_LAUNCHES; i++) {
        DRV(nv_cu.graph_launch(rx, stream));
        DRV(nv_cu.stream_synchronize(stream));
      }
      uint64_t t2 = hsad_now_ns();
      vt[0][round] = (double)(t1 - t0) / GB_LAUNCHES;
      vt[1][round] = (double)(t2 - t1) / GB_LAUNCHES;
      launches += 2 * GB_LAUNCHES;
      /* updates: add alternates 2, 1, ..., ending at 1 (the launches' +1) */
      gb_node_args_t ua[2], ra[2];
      gb_args(&ua[0], xh + s->upd * GB_ELEMS, 2), gb_args(&ua[1], xh + s->upd * GB_ELEMS, 1);
      gb_args(&ra[0], xr + s->upd * GB_ELEMS, 2), gb_args(&ra[1], xr + s->upd * GB_ELEMS, 1);
      nv_kernel_node_params_t kp[2] = {gb_kparams(f, &ra[0]), gb_kparams(f, &ra[1])};
      /* blocks of GB_UPDATE_BLOCK, the three paths taking turns block by block: hsad's
       * update, the driver's on the raw exec, and the driver's on hsad's own exec (the same
       * prebuilt parameters: what the driver costs on that exec, hsad's part aside) */
      nv_graph_exec_t hx;
      nv_graph_node_t hn;
      if (!nv_graph_exec_native(x, s->upd, &hx, &hn)) {
        fprintf(stderr, "hsad-bench-nvidia: graph %s: the exec is not fused\n", s->name);
        return 1;
      }
      nv_kernel_node_params_t hkp[2] = {gb_kparams(f, &ua[0]), gb_kparams(f, &ua[1])};
      uint64_t upd[3] = {0, 0, 0};
      for (int b = 0; b < 3 * GB_UPDATES / GB_UPDATE_BLOCK; b++) {
        int path = (b + round) % 3;
        t0 = hsad_now_ns();
        if (path == 1) {
          for (int i = 0; i < GB_UPDATE_BLOCK; i++)
            DRV(nv_cu.graph_exec_kernel_node_set_params(rx, rn[s->upd], &kp[i & 1]));
        } else if (path == 2) {
          for (int i = 0; i < GB_UPDATE_BLOCK; i++)
            DRV(nv_cu.graph_exec_kernel_node_set_params(hx, hn, &hkp[i & 1]));
        } else {
          for (int i = 0; i < GB_UPDATE_BLOCK; i++)
            HS("hsad_graph_exec_update", hsad_graph_exec_update(x, s->upd, &ua[i & 1].l));
        }
        upd[path] += hsad_now_ns() - t0;
      }
      for (int path = 0; path < 3; path++) vu[path][round] = (double)upd[path] / GB_UPDATES;
      t0 = hsad_now_ns();
      for (int i = 0; i < GB_INST; i++) {
        hsad_graph_exec_t *y;
        HS("hsad_graph_instantiate", hsad_graph_instantiate(g, qs, 2, &y));
        hsad_graph_exec_destroy(y);
      }
      t1 = hsad_now_ns();
      for (int i = 0; i < GB_INST; i++) {
        nv_graph_t yg;
        nv_graph_exec_t yx;
        nv_graph_node_t yn[GB_MAXN];
        if (gb_raw_build(s, f, xr, &yg, &yx, yn)) return 1;
        DRV(nv_cu.graph_exec_destroy(yx));
        DRV(nv_cu.graph_destroy(yg));
      }
      t2 = hsad_now_ns();
      vi[0][round] = (double)(t1 - t0) / GB_INST;
      vi[1][round] = (double)(t2 - t1) / GB_INST;
    }
    if (gb_check(s->name, "hsad", xh, s->n, launches) || gb_check(s->name, "raw", xr, s->n, launches))
      return 1;
    double lh = report("graph", "hsad launch", s->name, vl[0], rounds);
    double lr = report("graph", "cuGraphLaunch", s->name, vl[1], rounds);
    report("graph", "hsad launch+wait", s->name, vt[0], rounds);
    report("graph", "cuGraphLaunch+Sync", s->name, vt[1], rounds);
    double uh = report("graph", "hsad update", s->name, vu[0], rounds);
    double ur = report("graph", "cuGraphExecKernelNodeSetParams", s->name, vu[1], rounds);
    report("graph", "SetParams on hsad's exec", s->name, vu[2], rounds);
    report("graph", "hsad instantiate", s->name, vi[0], rounds);
    report("graph", "cuGraphInstantiate", s->name, vi[1], rounds);
    ratio[si][0] = lh / lr;
    ratio[si][1] = uh / ur;
    hsad_graph_exec_destroy(x);
    hsad_graph_destroy(g);
    DRV(nv_cu.graph_exec_destroy(rx));
    DRV(nv_cu.graph_destroy(rg));
    hsad_buffer_free(xh);
    hsad_buffer_free(xr);
    fprintf(stderr, "hsad-bench-nvidia: graph %s done\n", s->name);
  }
  hsad_queue_destroy(qs[0]);
  hsad_queue_destroy(qs[1]);
  nv_cu.stream_destroy(stream);
  return 0;
}
