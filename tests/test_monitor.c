/* test_monitor.c - dispatch monitoring (hsad_monitor.h): records, alerts, trace export. The
 * fixture kernels (tests/data/monitor/monitor.s) carry exact register, spill, scratch and LDS
 * metadata and run as no-ops under kfd-emu (KFD_EMU_NO_TWIN=noop). */
#define _GNU_SOURCE
#include <hsa/amd_hsa_queue.h>
#include <json-c/json.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fusion/hsad_fusion.h"
#include "tests/test_dispatch_util.h"

#ifndef MON_FIXTURE
#define MON_FIXTURE "build/tests/monitor/monitor-v5.hsaco"
#endif

typedef struct mon_env {
  th_env_t e;
  hsad_program_t *p;
  uint64_t buf;
  hsad_karg_t args[1];
} mon_env_t;

static void mon_open(mon_env_t *m) {
  setenv("KFD_EMU_NO_TWIN", "noop", 1);
  th_open(&m->e);
  TH_OK(hsad_program_load_file(m->e.dev, MON_FIXTURE, &m->p));
  void *b = th_alloc(&m->e, 4096);
  m->args[0] = (hsad_karg_t)HSAD_KARG_PTR(b);
}

static const hsad_device_kernel_t *mon_kernel(mon_env_t *m, const char *name) {
  const hsad_device_kernel_t *k = NULL;
  TH_OK(hsad_program_kernel(m->p, name, &k));
  return k;
}

static hsad_queue_t *mon_queue(mon_env_t *m, bool profiling, uint32_t private_size) {
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(m->e.dev, &(hsad_queue_options_t){.size = 64, .profiling = profiling,
                                                            .private_segment_size = private_size},
                          &q));
  return q;
}

/* n dispatches of k (the last with a completion, waited); ids into out_ids (may be NULL). */
static void mon_run(mon_env_t *m, hsad_queue_t *q, const hsad_device_kernel_t *k, uint32_t dims,
                    const uint32_t grid[3], const uint32_t block[3], int n, uint64_t *out_ids) {
  hsad_launch_t l = {.dims = dims, .grid = {grid[0], grid[1], grid[2]},
                     .block = {block[0], block[1], block[2]}, .args = m->args, .arg_count = 1};
  for (int i = 0; i < n; i++) {
    hsad_completion_t c;
    uint64_t id;
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), i == n - 1 ? &c : NULL, &id));
    if (out_ids) out_ids[i] = id;
    if (i == n - 1) TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  }
}

#define MAX_ALERTS 16
static hsad_monitor_alert_t got[MAX_ALERTS];
static char got_msg[MAX_ALERTS][512], got_kernel[MAX_ALERTS][64];
static int got_n;
/* kfd-emu's alerts (HSAD_ALERT_EMU_*), kept apart: every fixture kernel here has neither source
 * nor twin and runs as a no-op (KFD_EMU_NO_TWIN=noop), so each raises emu-no-code once */
static char got_emu_msg[MAX_ALERTS][1024], got_emu_kernel[MAX_ALERTS][64];
static hsad_alert_reason_t got_emu_reason[MAX_ALERTS];
static int got_emu_n;
static void on_alert(const hsad_monitor_alert_t *a, void *user) {
  (void)user;
  if (a->reason == HSAD_ALERT_EMU_HOST_TWIN || a->reason == HSAD_ALERT_EMU_NO_CODE) {
    if (got_emu_n == MAX_ALERTS) return;
    got_emu_reason[got_emu_n] = a->reason;
    snprintf(got_emu_msg[got_emu_n], sizeof got_emu_msg[0], "%s", a->message);
    snprintf(got_emu_kernel[got_emu_n++], sizeof got_emu_kernel[0], "%s", a->kernel);
    return;
  }
  if (got_n == MAX_ALERTS) return;
  got[got_n] = *a;
  snprintf(got_msg[got_n], sizeof got_msg[0], "%s", a->message);
  snprintf(got_kernel[got_n], sizeof got_kernel[0], "%s", a->kernel);
  got_n++;
}

static const uint32_t G1[3] = {256, 1, 1}, B1[3] = {64, 1, 1};

/* kfd-emu's message for a kernel with neither source nor twin (tools/kfd-emu/kernels.c) */
#define MON_NO_CODE(k)                                                                        \
  "kernel " k " has neither source nor a host twin: build its code object with hsad (hsad "   \
  "compile, hsad run FILE.cl, hsad_codeobj_compile), which carries the OpenCL C source, or "  \
  "name the source in KFD_EMU_CL_SOURCE=FILE.cl (hsad run --source FILE.cl); or give a twin " \
  "kfd_emu_twin_" k " in KFD_EMU_TWINS (kfd_emu_twin.h); KFD_EMU_NO_TWIN=noop completes it "   \
  "unexecuted"

/* fill (kernels/fill.cl, its code object carrying its source) on a monitored queue, twice;
 * checks the buffer (exact) and each record's execution; the emu alerts in got_emu_*. */
static void mon_fill(hsad_execution_t want) {
  th_env_t e;
  th_open(&e);
  hsad_program_t *p = NULL;
  TH_OK(hsad_program_load_file(e.dev, TEST_KERNDIR "/fill-gfx90a-v5.hsaco", &p));
  const hsad_device_kernel_t *k = NULL;
  TH_OK(hsad_program_kernel(p, "fill", &k));
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64}, &q));
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.alert = on_alert}));
  got_emu_n = 0;
  hsad_monitor_alerts_reset();
  uint32_t *dst = th_alloc(&e, 100 * sizeof *dst);
  memset(dst, 0xff, 100 * sizeof *dst);
  uint32_t value = 7, n = 90;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {96, 1, 1}, .block = {32, 1, 1}, .args = args,
                     .arg_count = 3};
  for (int i = 0; i < 2; i++) {
    hsad_completion_t c;
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, NULL));
    TH_OK(hsad_completion_wait(&c, th_in(30 * TH_SEC)));
  }
  for (uint32_t i = 0; i < 100; i++) cr_assert_eq(dst[i], i < 90 ? 7u : 0xffffffffu, "dst[%u]", i);
  hsad_dispatch_record_t r[2];
  uint32_t got = 0;
  TH_OK(hsad_queue_monitor_drain(q, r, 2, &got, NULL));
  cr_assert_eq(got, 2);
  for (uint32_t i = 0; i < got; i++) cr_assert_eq(r[i].execution, want, "record %u", i);
  th_finish(&e, q, p);
}

Test(monitor, emu_source_mode_record_and_no_alert) {
  mon_fill(HSAD_EXECUTION_EMU_SOURCE);
  cr_assert_eq(got_emu_n, 0, "%s", got_emu_msg[0]);
}

/* KFD_EMU_KERNEL_MODE=twin: fill's twin runs though its code object carries source, and the
 * library says so once (an emu-host-twin alert with kfd-emu's line), for two dispatches */
Test(monitor, emu_host_twin_alert_once_per_kernel) {
  setenv("KFD_EMU_KERNEL_MODE", "twin", 1);
  mon_fill(HSAD_EXECUTION_EMU_TWIN);
  cr_assert_eq(got_emu_n, 1);
  cr_assert_eq(got_emu_reason[0], HSAD_ALERT_EMU_HOST_TWIN);
  cr_assert_str_eq(got_emu_kernel[0], "fill");
  cr_assert_str_eq(got_emu_msg[0], "ran host twin of 'fill' (KFD_EMU_KERNEL_MODE=twin; it has "
                   "source)");
}

/* issue 20: the library says once per kernel how kfd-emu runs it: each record's execution, and
 * one emu-no-code alert per kernel (not per queue, workgroup size or dispatch) */
Test(monitor, emu_execution_in_records_and_no_code_alert_once_per_kernel) {
  mon_env_t m;
  mon_open(&m);
  hsad_queue_t *q1 = mon_queue(&m, false, 0), *q2 = mon_queue(&m, false, 0);
  hsad_monitor_options_t o = {.occupancy_percent = 1, .spill_ratio_percent = 100,
                              .alert = on_alert};
  TH_OK(hsad_queue_monitor_enable(q1, &o));
  TH_OK(hsad_queue_monitor_enable(q2, &o));
  got_emu_n = 0;
  hsad_monitor_alerts_reset();
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_plain");
  mon_run(&m, q1, k, 1, G1, B1, 2, NULL);
  mon_run(&m, q1, k, 1, G1, (uint32_t[3]){128, 1, 1}, 1, NULL);
  mon_run(&m, q2, k, 1, G1, B1, 1, NULL);
  cr_assert_eq(got_emu_n, 1);
  cr_assert_eq(got_emu_reason[0], HSAD_ALERT_EMU_NO_CODE);
  cr_assert_str_eq(got_emu_kernel[0], "hm_plain");
  cr_assert_str_eq(got_emu_msg[0], MON_NO_CODE("hm_plain"));
  cr_assert_str_eq(hsad_alert_reason_name(HSAD_ALERT_EMU_NO_CODE), "emu-no-code");
  cr_assert_str_eq(hsad_alert_reason_name(HSAD_ALERT_EMU_HOST_TWIN), "emu-host-twin");
  hsad_dispatch_record_t r[4];
  uint32_t n;
  TH_OK(hsad_queue_monitor_drain(q1, r, 4, &n, NULL));
  cr_assert_eq(n, 3);
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(r[i].execution, HSAD_EXECUTION_EMU_NONE);
    cr_assert_str_eq(hsad_execution_name(r[i].execution), "emu-none");
  }
  cr_assert_str_eq(hsad_execution_name(HSAD_EXECUTION_EMU_TWIN), "emu-twin");
  cr_assert_str_eq(hsad_execution_name(HSAD_EXECUTION_EMU_SOURCE), "emu-source");
  cr_assert_str_eq(hsad_execution_name(HSAD_EXECUTION_DEVICE), "device");
  hsad_queue_destroy(q2);
  th_finish(&m.e, q1, m.p);
}

Test(monitor, records_equal_dispatches_and_drops_are_counted) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_plain");
  hsad_queue_t *q = mon_queue(&m, false, 0);
  uint32_t n0;
  TH_ERR_IS(hsad_queue_monitor_drain(q, NULL, 0, &n0, NULL), HSAD_ERR_UNSUPPORTED,
            "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
            "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  TH_ERR_IS(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 6}),
            HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_monitor_enable: capacity 6 records: must be a power of two up to 16777216");
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 4, .no_alerts = true}));
  uint64_t ids[6];
  const uint32_t grid[3] = {256, 2, 1}, block[3] = {64, 2, 1};
  uint64_t t_before = hsad_now_ns();
  mon_run(&m, q, k, 2, grid, block, 6, ids);
  uint64_t t_after = hsad_now_ns();
  hsad_dispatch_record_t r[8];
  uint32_t n;
  uint64_t dropped;
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
  cr_assert_eq(n, 4);
  cr_assert_eq(dropped, 2);
  hsad_pressure_row_t row;
  TH_OK(hsad_kernel_pressure_at(hsad_device_kernel_desc(k)->codeobj_kernel, NULL, 128, 0, &row));
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(r[i].queue, q);
    cr_assert_eq(r[i].packet_id, ids[i]);
    cr_assert_str_eq(r[i].kernel, "hm_plain");
    cr_assert_eq(r[i].kernel_object, hsad_device_kernel_desc(k)->kernel_object);
    cr_assert_eq(r[i].dims, 2);
    cr_assert_eq(r[i].grid[0], 256);
    cr_assert_eq(r[i].grid[1], 2);
    cr_assert_eq(r[i].grid[2], 1);
    cr_assert_eq(r[i].workgroup[0], 64);
    cr_assert_eq(r[i].workgroup[1], 2);
    cr_assert_eq(r[i].workgroup[2], 1);
    cr_assert_eq(r[i].vgpr_count, 8);
    cr_assert_eq(r[i].agpr_count, 0);
    cr_assert_eq(r[i].sgpr_count, 16);
    cr_assert_eq(r[i].vgpr_spill_count, 0);
    cr_assert_eq(r[i].sgpr_spill_count, 0);
    cr_assert_eq(r[i].private_segment_size, 0);
    cr_assert_eq(r[i].group_segment_size, 0);
    cr_assert_eq(r[i].waves_per_simd, row.occupancy.waves_per_simd);
    cr_assert_eq(r[i].occupancy_percent,
                 (uint32_t)((uint64_t)row.work_items_per_cu * 100 / row.best_work_items_per_cu));
    cr_assert_eq(r[i].thread_id, (uint32_t)syscall(SYS_gettid));
    cr_assert(r[i].submit_start_ns >= t_before && r[i].submit_start_ns <= r[i].submit_end_ns &&
              r[i].submit_end_ns <= t_after);
    cr_assert(i == 0 || r[i].submit_start_ns >= r[i - 1].submit_end_ns);
    cr_assert_eq(r[i].device_times, false);
  }
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
  cr_assert_eq(n, 0);
  cr_assert_eq(dropped, 0);
  /* disabled: nothing recorded */
  hsad_queue_monitor_disable(q);
  mon_run(&m, q, k, 2, grid, block, 2, NULL);
  TH_ERR_IS(hsad_queue_monitor_drain(q, r, 8, &n, NULL), HSAD_ERR_UNSUPPORTED,
            "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
            "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  th_finish(&m.e, q, m.p);
}

Test(monitor, process_wide_enable_covers_new_queues_with_device_times) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_plain");
  TH_OK(hsad_monitor_enable_process(&(hsad_monitor_options_t){.no_alerts = true}));
  hsad_queue_t *q = mon_queue(&m, true, 0);
  hsad_monitor_disable_process();
  hsad_queue_t *q2 = mon_queue(&m, true, 0);
  uint64_t ids[3];
  mon_run(&m, q, k, 1, G1, B1, 3, ids);
  hsad_dispatch_record_t r[4];
  uint32_t n;
  TH_OK(hsad_queue_monitor_drain(q, r, 4, &n, NULL));
  cr_assert_eq(n, 3);
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(r[i].packet_id, ids[i]);
    cr_assert_eq(r[i].device_times, true);
    cr_assert(r[i].start_ns <= r[i].end_ns);
  }
  TH_ERR_IS(hsad_queue_monitor_drain(q2, r, 4, &n, NULL), HSAD_ERR_UNSUPPORTED,
            "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
            "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  hsad_queue_destroy(q2);
  th_finish(&m.e, q, m.p);
}

Test(monitor, spill_ratio_alert_once_above_threshold_not_at_it) {
  mon_env_t m;
  mon_open(&m);
  hsad_queue_t *q = mon_queue(&m, false, 0);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.occupancy_percent = 1,
                                                                .alert = on_alert}));
  got_n = 0;
  /* 5 spills / 50 registers = 10%: not above 10% */
  mon_run(&m, q, mon_kernel(&m, "hm_spill10"), 1, G1, B1, 3, NULL);
  cr_assert_eq(got_n, 0);
  /* 5 / 49 = 10.2%: once, however many dispatches */
  mon_run(&m, q, mon_kernel(&m, "hm_spill11"), 1, G1, B1, 3, NULL);
  mon_run(&m, q, mon_kernel(&m, "hm_spill11"), 1, G1, (uint32_t[3]){128, 1, 1}, 2, NULL);
  cr_assert_eq(got_n, 1);
  cr_assert_eq(got[0].reason, HSAD_ALERT_SPILL_RATIO);
  cr_assert_str_eq(got_kernel[0], "hm_spill11");
  cr_assert_eq(got[0].queue, q);
  cr_assert_eq(got[0].value, 10);
  cr_assert_eq(got[0].threshold, 10);
  cr_assert_str_eq(got_msg[0], "kernel hm_spill11: 5 spilled registers (5 VGPR + 0 SGPR) are 10% "
                   "of its 49 registers (40 VGPR + 0 AGPR + 9 SGPR), above the 10% threshold");
  cr_assert_str_eq(hsad_alert_reason_name(got[0].reason), "spill-ratio");
  th_finish(&m.e, q, m.p);
}

Test(monitor, low_occupancy_alert_once_below_threshold_not_at_it) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_lds");
  hsad_pressure_row_t row;
  TH_OK(hsad_kernel_pressure_at(hsad_device_kernel_desc(k)->codeobj_kernel, NULL, 64, 0, &row));
  uint32_t p = (uint32_t)((uint64_t)row.work_items_per_cu * 100 / row.best_work_items_per_cu);
  cr_assert_eq(p, 25, "32 KiB of LDS: 2 workgroups of 64 per CU against 2 of 256");
  hsad_queue_t *q = mon_queue(&m, false, 0);
  got_n = 0;
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.occupancy_percent = p,
                                                                .alert = on_alert}));
  mon_run(&m, q, k, 1, G1, B1, 2, NULL);
  cr_assert_eq(got_n, 0);
  hsad_queue_monitor_disable(q);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.occupancy_percent = p + 1,
                                                                .alert = on_alert}));
  mon_run(&m, q, k, 1, G1, B1, 3, NULL);
  cr_assert_eq(got_n, 1);
  cr_assert_eq(got[0].reason, HSAD_ALERT_LOW_OCCUPANCY);
  cr_assert_eq(got[0].value, 25);
  cr_assert_eq(got[0].threshold, 26);
  char want[512];
  snprintf(want, sizeof want, "kernel hm_lds at workgroup size 64: %u resident work-items per "
           "CU, 25%% of the %u at its best workgroup size %u, below the 26%% threshold (limited "
           "by lds)", row.work_items_per_cu, row.best_work_items_per_cu, row.best_workgroup_size);
  cr_assert_str_eq(got_msg[0], want);
  cr_assert_eq(row.work_items_per_cu, 128);
  cr_assert_eq(row.best_work_items_per_cu, 512);
  th_finish(&m.e, q, m.p);
}

Test(monitor, scratch_growth_and_limit_alerts) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_scratch");
  hsad_dispatch_record_t r[4];
  uint32_t n;
  /* enough scratch reserved: no growth, no alert */
  hsad_queue_t *big = mon_queue(&m, false, 256);
  got_n = 0;
  TH_OK(hsad_queue_monitor_enable(big, &(hsad_monitor_options_t){.alert = on_alert}));
  mon_run(&m, big, k, 1, G1, B1, 1, NULL);
  TH_OK(hsad_queue_monitor_drain(big, r, 4, &n, NULL));
  cr_assert_eq(n, 1);
  uint64_t s = r[0].queue_scratch_before;
  cr_assert(s > 0);
  cr_assert_eq(r[0].queue_scratch_after, s);
  cr_assert_eq(r[0].private_segment_size, 256);
  cr_assert_eq(got_n, 0);
  /* limit at the queue's scratch: not above it */
  TH_OK(hsad_queue_monitor_enable(big, &(hsad_monitor_options_t){.scratch_limit = s,
                                                                  .alert = on_alert}));
  mon_run(&m, big, k, 1, G1, B1, 1, NULL);
  TH_OK(hsad_queue_monitor_drain(big, r, 4, &n, NULL));
  cr_assert_eq(got_n, 0);
  TH_OK(hsad_queue_monitor_enable(big, &(hsad_monitor_options_t){.scratch_limit = s - 1,
                                                                  .alert = on_alert}));
  mon_run(&m, big, k, 1, G1, B1, 2, NULL);
  TH_OK(hsad_queue_monitor_drain(big, r, 4, &n, NULL));
  cr_assert_eq(n, 2);
  cr_assert_eq(got_n, 1);
  cr_assert_eq(got[0].reason, HSAD_ALERT_SCRATCH_LIMIT);
  cr_assert_eq(got[0].value, s);
  cr_assert_eq(got[0].threshold, s - 1);
  char want[512];
  snprintf(want, sizeof want, "kernel hm_scratch (packet %llu): the queue's scratch is %llu "
           "bytes, above the limit of %llu", (unsigned long long)r[0].packet_id,
           (unsigned long long)s, (unsigned long long)(s - 1));
  cr_assert_str_eq(got_msg[0], want);
  hsad_queue_destroy(big);
  /* 16 bytes reserved, 256 needed: ROCr grows the scratch during the first dispatch */
  hsad_queue_t *q = mon_queue(&m, false, 16);
  got_n = 0;
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.alert = on_alert}));
  mon_run(&m, q, k, 1, G1, B1, 1, NULL);
  mon_run(&m, q, k, 1, G1, B1, 1, NULL);
  TH_OK(hsad_queue_monitor_drain(q, r, 4, &n, NULL));
  cr_assert_eq(n, 2);
  cr_assert(r[0].queue_scratch_after > r[0].queue_scratch_before);
  cr_assert_eq(r[1].queue_scratch_before, r[0].queue_scratch_after);
  cr_assert_eq(got_n, 1);
  cr_assert_eq(got[0].reason, HSAD_ALERT_SCRATCH_GROWTH);
  cr_assert_eq(got[0].packet_id, r[0].packet_id);
  cr_assert_eq(got[0].value, r[0].queue_scratch_after);
  cr_assert_eq(got[0].threshold, r[0].queue_scratch_before);
  th_finish(&m.e, q, m.p);
}

/* ---- trace ---- */

static const char *str_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}
static int64_t int_of(json_object *o, const char *key) {
  json_object *v;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}
static int64_t ns_of(json_object *o, const char *key) {
  json_object *v;
  cr_assert(json_object_object_get_ex(o, key, &v), "event lacks %s", key);
  return llround(json_object_get_double(v) * 1000.0);
}

typedef struct slice { int64_t pid, tid, ts, end; } slice_t;
static int slice_cmp(const void *a, const void *b) {
  const slice_t *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

Test(monitor, trace_parses_with_queue_tracks_slices_and_flows) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_plain");
  hsad_queue_t *q1 = mon_queue(&m, true, 0), *q2 = mon_queue(&m, true, 0);
  TH_OK(hsad_queue_monitor_enable(q1, &(hsad_monitor_options_t){.no_alerts = true}));
  TH_OK(hsad_queue_monitor_enable(q2, &(hsad_monitor_options_t){.no_alerts = true}));
  mon_run(&m, q1, k, 1, G1, B1, 3, NULL);
  mon_run(&m, q2, k, 1, G1, B1, 2, NULL);
  hsad_trace_t *t;
  TH_OK(hsad_trace_create(&t));
  hsad_dispatch_record_t r[8];
  uint32_t n;
  TH_OK(hsad_queue_monitor_drain(q1, r, 8, &n, NULL));
  cr_assert_eq(n, 3);
  TH_OK(hsad_trace_add(t, r, n));
  TH_OK(hsad_queue_monitor_drain(q2, r, 8, &n, NULL));
  cr_assert_eq(n, 2);
  TH_OK(hsad_trace_add(t, r, n));
  char path[] = "/tmp/hsad-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  TH_OK(hsad_trace_write(t, path));
  TH_ERR_IS(hsad_trace_write(t, "/nonexistent-dir/t.json"), HSAD_ERR_IO,
            "hsad_trace_write: cannot create /nonexistent-dir/t.json: No such file or directory");
  hsad_trace_destroy(t);
  json_object *root = json_object_from_file(path);
  unlink(path);
  cr_assert_not_null(root, "the trace does not parse: %s", json_util_get_last_err());
  json_object *ev;
  cr_assert(json_object_object_get_ex(root, "traceEvents", &ev));
  /* rocprofv3's names: GPU 0 is KFD node 1 under kfd-emu (node 0 is the CPU); queues are
   * numbered per agent from 0, here in creation order */
  cr_assert_lt(hsad_queue_hsa(q1)->id, hsad_queue_hsa(q2)->id);
  const char *name1 = "COMPUTE Agent [1] QUEUE [0] GPU", *name2 = "COMPUTE Agent [1] QUEUE [1] GPU";
  int64_t tid1 = -1, tid2 = -1, gpid = -1;
  size_t len = json_object_array_length(ev);
  int host = 0, dev1 = 0, dev2 = 0, s = 0, f = 0, tracks = 0;
  slice_t sl[16];
  int ns = 0;
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    if (!strcmp(str_of(e, "ph"), "M") && !strcmp(str_of(e, "name"), "thread_name")) {
      json_object *a;
      json_object_object_get_ex(e, "args", &a);
      const char *nm = str_of(a, "name");
      if (!strncmp(nm, "COMPUTE", 7)) tracks++;
      if (!strcmp(nm, name1)) tid1 = int_of(e, "tid"), gpid = int_of(e, "pid");
      if (!strcmp(nm, name2)) tid2 = int_of(e, "tid");
    }
  }
  cr_assert_eq(tracks, 2, "one track per queue (no overlapping dispatches here)");
  cr_assert(tid1 >= 0 && tid2 >= 0 && tid1 != tid2);
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    const char *ph = str_of(e, "ph");
    if (!strcmp(ph, "X")) {
      cr_assert(ns < 16);
      sl[ns++] = (slice_t){int_of(e, "pid"), int_of(e, "tid"), ns_of(e, "ts"),
                           ns_of(e, "ts") + ns_of(e, "dur")};
      if (!strcmp(str_of(e, "cat"), "submit")) {
        host++;
        cr_assert_str_eq(str_of(e, "name"), "submit hm_plain");
        cr_assert_eq(int_of(e, "pid"), getpid());
        cr_assert_eq(int_of(e, "tid"), syscall(SYS_gettid));
      } else {
        cr_assert_str_eq(str_of(e, "name"), "hm_plain");
        cr_assert_eq(int_of(e, "pid"), gpid);
        dev1 += int_of(e, "tid") == tid1;
        dev2 += int_of(e, "tid") == tid2;
        json_object *a;
        cr_assert(json_object_object_get_ex(e, "args", &a));
        cr_assert_str_eq(str_of(a, "kernel"), "hm_plain");
        cr_assert_eq(int_of(a, "vgpr_count"), 8);
        cr_assert_eq(int_of(a, "queue"),
                     (int64_t)hsad_queue_hsa(int_of(e, "tid") == tid1 ? q1 : q2)->id);
      }
    }
    s += !strcmp(ph, "s");
    f += !strcmp(ph, "f");
  }
  cr_assert_eq(host, 5);
  cr_assert_eq(dev1, 3);
  cr_assert_eq(dev2, 2);
  cr_assert_eq(s, 5);
  cr_assert_eq(f, 5);
  qsort(sl, ns, sizeof *sl, slice_cmp);
  for (int i = 1; i < ns; i++)
    if (sl[i].pid == sl[i - 1].pid && sl[i].tid == sl[i - 1].tid)
      cr_assert(sl[i].ts >= sl[i - 1].end, "slices overlap on track %lld/%lld",
                (long long)sl[i].pid, (long long)sl[i].tid);
  json_object_put(root);
  hsad_queue_destroy(q2);
  th_finish(&m.e, q1, m.p);
}

/* Batches and graph launches (fused and rolled back) leave one record per kernel dispatch:
 * packet id, kernel, geometry and registers as dispatched; barrier packets leave none. A
 * batch's dispatches and a graph's kernel packets carry timestamp signals on a profiling queue
 * (device times; the epoch goes on a barrier-AND after them). */
static void mon_check(const hsad_dispatch_record_t *r, hsad_queue_t *q, uint64_t id,
                      const char *kernel, uint32_t grid, uint32_t block, bool times) {
  cr_assert_eq(r->queue, q);
  cr_assert_eq(r->packet_id, id, "%llu vs %llu", (unsigned long long)r->packet_id,
               (unsigned long long)id);
  cr_assert_str_eq(r->kernel, kernel);
  cr_assert_eq(r->dims, 1);
  cr_assert_eq(r->grid[0], grid);
  cr_assert_eq(r->grid[1], 1);
  cr_assert_eq(r->workgroup[0], block);
  cr_assert_eq(r->workgroup[1], 1);
  cr_assert_eq(r->thread_id, (uint32_t)syscall(SYS_gettid));
  cr_assert(r->submit_start_ns <= r->submit_end_ns);
  cr_assert_eq(r->device_times, times);
  cr_assert(r->start_ns <= r->end_ns);
}

Test(monitor, batch_and_graph_launches_leave_a_record_per_dispatch) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *kp = mon_kernel(&m, "hm_plain"), *ks = mon_kernel(&m, "hm_spill10");
  hsad_queue_t *q = mon_queue(&m, true, 0);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.no_alerts = true}));
  /* a batch of 3 */
  hsad_dispatch_desc_t items[3];
  for (int i = 0; i < 3; i++)
    items[i] = (hsad_dispatch_desc_t){
        .kernel = i == 1 ? ks : kp,
        .launch = {.dims = 1, .grid = {256u << i}, .block = {64}, .args = m.args, .arg_count = 1}};
  hsad_completion_t c;
  uint64_t first;
  TH_OK(hsad_queue_dispatch_batch(q, items, 3, th_in(TH_SEC), &c, &first));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  hsad_dispatch_record_t r[8];
  uint32_t n;
  uint64_t dropped;
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
  cr_assert_eq(n, 3);
  cr_assert_eq(dropped, 0);
  for (uint32_t i = 0; i < 3; i++)
    mon_check(&r[i], q, first + i, i == 1 ? "hm_spill10" : "hm_plain", 256u << i, 64, true);
  cr_assert_eq(r[1].vgpr_spill_count + r[1].sgpr_spill_count > 0, true);
  cr_assert_eq(r[0].submit_start_ns, r[2].submit_start_ns); /* one mark for the batch */

  /* a graph: A -> B, A -> C on one queue (no barrier packets needed between independent
   * nodes; the queue's last packet carries the epoch) */
  hsad_graph_t *g;
  uint32_t a, b, cc;
  hsad_launch_t la = {.dims = 1, .grid = {256}, .block = {64}, .args = m.args, .arg_count = 1};
  hsad_launch_t lb = {.dims = 1, .grid = {512}, .block = {128}, .args = m.args, .arg_count = 1};
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "A", 0, kp, &la, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, ks, &lb, &a, 1, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, kp, &lb, &a, 1, &cc));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  /* the packets of the launch and the kernel nodes among them */
  uint32_t np = hsad_graph_exec_packet_count(x, 0);
  int32_t node[16];
  for (uint32_t i = 0; i < np; i++) {
    uint8_t pk[64];
    TH_OK(hsad_graph_exec_packet(x, 0, i, pk, &node[i]));
  }
  static const char *const kn[3] = {"hm_plain", "hm_spill10", "hm_plain"};
  static const uint32_t gr[3] = {256, 512, 512}, bl[3] = {64, 128, 128};
  for (int mode = 0; mode < 2; mode++) { /* fused, then rolled back (sequential requested) */
    hsad_graph_rollback_t why;
    uint64_t w0 = ((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
    TH_OK(hsad_graph_launch(x, mode ? HSAD_GRAPH_SEQUENTIAL : 0, th_in(TH_SEC), &c, &why));
    cr_assert_eq(why, mode ? HSAD_GRAPH_ROLLBACK_REQUESTED : HSAD_GRAPH_ROLLBACK_NONE);
    TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
    TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
    cr_assert_eq(n, 3, "mode %d: %u records", mode, n);
    if (mode == 0) {
      /* fused: the records follow the packets of the run, kernel nodes only */
      uint32_t j = 0;
      for (uint32_t i = 0; i < np; i++) {
        if (node[i] < 0) continue;
        mon_check(&r[j], q, w0 + i, kn[node[i]], gr[node[i]], bl[node[i]], true);
        j++;
      }
      cr_assert_eq(j, 3);
    } else {
      /* sequential: per node in topological order A, B, C, the dispatch (its timestamp
       * signal) and the barrier-AND carrying the epoch */
      for (uint32_t i = 0; i < 3; i++) mon_check(&r[i], q, w0 + 2 * i, kn[i], gr[i], bl[i], true);
    }
  }
  hsad_graph_exec_destroy(x);
  th_finish(&m.e, q, m.p);
}

/* ---- the trace of batches, graph launches and two submitting threads ---- */

typedef struct tslice {
  int64_t pid, tid, ts, end;
  const char *name;
  int64_t queue;
  int npk;
  int64_t pk[4];                 /* packet ids of the slice (its submission or dispatch) */
} tslice_t;

static int tslice_cmp(const void *a, const void *b) {
  const tslice_t *x = a, *y = b;
  if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The one slice of track (pid, tid) whose [ts, end] holds `ts` (asserts exactly one). */
static const tslice_t *slice_at(const tslice_t *sl, int n, int64_t pid, int64_t tid, int64_t ts) {
  const tslice_t *hit = NULL;
  int hits = 0;
  for (int i = 0; i < n; i++)
    if (sl[i].pid == pid && sl[i].tid == tid && sl[i].ts <= ts && ts <= sl[i].end)
      hit = &sl[i], hits++;
  cr_assert_eq(hits, 1, "ts %lld on track %lld/%lld is in %d slices", (long long)ts,
               (long long)pid, (long long)tid, hits);
  return hit;
}

typedef struct tbatch {
  mon_env_t *m;
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t tid;
  uint64_t first;
  hsad_status_t s;
} tbatch_t;

/* The second submitting thread: a batch of 2 on its own queue, waited. */
static void *tbatch_thread(void *arg) {
  tbatch_t *b = arg;
  b->tid = (uint32_t)syscall(SYS_gettid);
  hsad_dispatch_desc_t it[2];
  for (int i = 0; i < 2; i++)
    it[i] = (hsad_dispatch_desc_t){
        .kernel = b->k,
        .launch = {.dims = 1, .grid = {256}, .block = {64}, .args = b->m->args, .arg_count = 1}};
  hsad_completion_t c;
  b->s = hsad_queue_dispatch_batch(b->q, it, 2, th_in(TH_SEC), &c, &b->first);
  if (!b->s) b->s = hsad_completion_wait(&c, th_in(10 * TH_SEC));
  return NULL;
}

static void json_packets(json_object *args, tslice_t *t) {
  json_object *ids, *one;
  t->npk = 0;
  if (json_object_object_get_ex(args, "packet_ids", &ids)) {
    cr_assert_leq(json_object_array_length(ids), 4);
    for (size_t i = 0; i < json_object_array_length(ids); i++)
      t->pk[t->npk++] = json_object_get_int64(json_object_array_get_idx(ids, i));
  } else if (json_object_object_get_ex(args, "packet_id", &one)) {
    t->pk[t->npk++] = json_object_get_int64(one);
  }
  t->queue = int_of(args, "queue");
}

/* Main thread: a single dispatch, a batch of 3, a graph of 3 kernels fused and rolled back to
 * sequential, on profiling queue q; a second thread: a batch of 2 on profiling queue q2. The
 * trace holds one submit slice per submission (1 + 1 + 1 + 3 on the main thread's track, 1 on
 * the other's), never overlapping on a track; a dispatch slice per record with device times
 * (1 + 3 + 3 + 3 on q's track, 2 on q2's); a flow per dispatch slice whose
 * start binds inside the submit slice of its submission and whose finish, same id, binds
 * inside its dispatch slice. */
Test(monitor, trace_batch_graph_two_threads_nests_and_flows) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *kp = mon_kernel(&m, "hm_plain"), *ks = mon_kernel(&m, "hm_spill10");
  hsad_queue_t *q = mon_queue(&m, true, 0), *q2 = mon_queue(&m, true, 0);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.no_alerts = true}));
  TH_OK(hsad_queue_monitor_enable(q2, &(hsad_monitor_options_t){.no_alerts = true}));
  uint64_t single;
  mon_run(&m, q, kp, 1, G1, B1, 1, &single);
  hsad_dispatch_desc_t items[3];
  for (int i = 0; i < 3; i++)
    items[i] = (hsad_dispatch_desc_t){
        .kernel = i == 1 ? ks : kp,
        .launch = {.dims = 1, .grid = {256}, .block = {64}, .args = m.args, .arg_count = 1}};
  hsad_completion_t c;
  uint64_t first;
  TH_OK(hsad_queue_dispatch_batch(q, items, 3, th_in(TH_SEC), &c, &first));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  hsad_graph_t *g;
  uint32_t a, b, cc;
  hsad_launch_t la = {.dims = 1, .grid = {256}, .block = {64}, .args = m.args, .arg_count = 1};
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "A", 0, kp, &la, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, ks, &la, &a, 1, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, kp, &la, &b, 1, &cc));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  for (int mode = 0; mode < 2; mode++) {
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, mode ? HSAD_GRAPH_SEQUENTIAL : 0, th_in(TH_SEC), &c, &why));
    TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  }
  hsad_graph_exec_destroy(x);
  tbatch_t tb = {.m = &m, .q = q2, .k = kp};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, tbatch_thread, &tb), 0);
  pthread_join(th, NULL);
  TH_OK(tb.s);

  hsad_dispatch_record_t r[16];
  uint32_t n, n2;
  TH_OK(hsad_queue_monitor_drain(q, r, 16, &n, NULL));
  cr_assert_eq(n, 10, "1 + 3 + 3 + 3 records");
  /* a batch's records share their submit interval */
  cr_assert_eq(r[1].submit_start_ns, r[3].submit_start_ns);
  cr_assert_eq(r[1].submit_end_ns, r[3].submit_end_ns);
  cr_assert(r[1].submit_start_ns >= r[0].submit_end_ns);
  TH_OK(hsad_queue_monitor_drain(q2, r + n, 16 - n, &n2, NULL));
  cr_assert_eq(n2, 2);
  hsad_trace_t *t;
  TH_OK(hsad_trace_create(&t));
  TH_OK(hsad_trace_add(t, r, n + n2));
  char path[] = "/tmp/hsad-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  TH_OK(hsad_trace_write(t, path));
  hsad_trace_destroy(t);
  json_object *root = json_object_from_file(path);
  unlink(path);
  cr_assert_not_null(root, "the trace does not parse: %s", json_util_get_last_err());
  json_object *ev;
  cr_assert(json_object_object_get_ex(root, "traceEvents", &ev));

  int64_t pid = getpid(), me = syscall(SYS_gettid), gpid = 1 << 30;
  cr_assert_eq(me, pid, "Criterion runs the test on the process's main thread");
  char want_me[48], want_other[48];
  snprintf(want_me, sizeof want_me, "THREAD 0 (%lld)", (long long)me);
  snprintf(want_other, sizeof want_other, "THREAD 1 (%u)", tb.tid);
  int64_t qtid = -1, q2tid = -1;
  int threads = 0, queues = 0;
  tslice_t sl[32];
  int ns = 0;
  size_t len = json_object_array_length(ev);
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i), *args = NULL;
    json_object_object_get_ex(e, "args", &args);
    const char *ph = str_of(e, "ph");
    if (!strcmp(ph, "M") && !strcmp(str_of(e, "name"), "thread_name")) {
      const char *nm = str_of(args, "name");
      if (int_of(e, "pid") == pid) {
        threads++;
        cr_assert_str_eq(nm, int_of(e, "tid") == me ? want_me : want_other);
        cr_assert(int_of(e, "tid") == me || int_of(e, "tid") == tb.tid);
      } else {
        cr_assert_eq(int_of(e, "pid"), gpid);
        queues++;
        if (!strcmp(nm, "COMPUTE Agent [1] QUEUE [0] GPU")) qtid = int_of(e, "tid");
        else if (!strcmp(nm, "COMPUTE Agent [1] QUEUE [1] GPU")) q2tid = int_of(e, "tid");
        else cr_assert_fail("unexpected queue track %s", nm);
      }
    }
    if (!strcmp(ph, "X")) {
      cr_assert_lt(ns, 32);
      tslice_t *x = &sl[ns++];
      *x = (tslice_t){int_of(e, "pid"), int_of(e, "tid"), ns_of(e, "ts"),
                      ns_of(e, "ts") + ns_of(e, "dur"), str_of(e, "name"), 0, 0, {0}};
      json_packets(args, x);
    }
  }
  cr_assert_eq(threads, 2);
  cr_assert_eq(queues, 2);
  cr_assert(qtid >= 0 && q2tid >= 0 && qtid != q2tid);
  /* slice counts per track, and the batch slices exactly */
  int on_me = 0, on_other = 0, on_q = 0, on_q2 = 0, batches = 0;
  for (int i = 0; i < ns; i++) {
    if (sl[i].pid == pid && sl[i].tid == me) on_me++;
    if (sl[i].pid == pid && sl[i].tid == tb.tid) on_other++;
    if (sl[i].pid == gpid && sl[i].tid == qtid) on_q++;
    if (sl[i].pid == gpid && sl[i].tid == q2tid) on_q2++;
    if (sl[i].pid == pid && sl[i].npk > 1) {
      batches++;
      cr_assert_str_eq(sl[i].name, sl[i].npk == 3 ? "submit 3 dispatches" : "submit 2 dispatches");
      for (int k = 1; k < sl[i].npk; k++) cr_assert_eq(sl[i].pk[k], sl[i].pk[0] + k);
    }
    if (sl[i].pid == pid && sl[i].npk == 1) cr_assert(!strncmp(sl[i].name, "submit hm_", 10));
  }
  cr_assert_eq(on_me, 6, "single, batch, fused graph, 3 sequential nodes: %d", on_me);
  cr_assert_eq(on_other, 1);
  cr_assert_eq(on_q, 10);
  cr_assert_eq(on_q2, 2);
  cr_assert_eq(ns, 19);
  cr_assert_eq(batches, 3, "the two batches and the fused graph");
  /* the batch of 3 and the other thread's batch of 2, exactly */
  int seen3 = 0, seen2 = 0;
  for (int i = 0; i < ns; i++) {
    if (sl[i].pid == pid && sl[i].npk == 3 && sl[i].pk[0] == (int64_t)first) {
      seen3++;
      cr_assert_eq(sl[i].tid, me);
      cr_assert_eq(sl[i].queue, (int64_t)hsad_queue_hsa(q)->id);
    }
    if (sl[i].pid == pid && sl[i].npk == 2) {
      seen2++;
      cr_assert_eq(sl[i].pk[0], (int64_t)tb.first);
      cr_assert_eq(sl[i].tid, tb.tid);
      cr_assert_eq(sl[i].queue, (int64_t)hsad_queue_hsa(q2)->id);
    }
  }
  cr_assert_eq(seen3, 1);
  cr_assert_eq(seen2, 1);
  /* no overlap on any track */
  qsort(sl, ns, sizeof *sl, tslice_cmp);
  for (int i = 1; i < ns; i++)
    if (sl[i].pid == sl[i - 1].pid && sl[i].tid == sl[i - 1].tid)
      cr_assert(sl[i].ts >= sl[i - 1].end, "slices overlap on track %lld/%lld",
                (long long)sl[i].pid, (long long)sl[i].tid);
  /* flows: every 's' has one 'f' of the same id; the 's' binds inside the submit slice of a
   * submission holding the packet whose dispatch slice the 'f' binds inside */
  int flows = 0;
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    if (strcmp(str_of(e, "ph"), "s")) continue;
    flows++;
    int64_t id = int_of(e, "id");
    cr_assert_eq(int_of(e, "pid"), pid);
    const tslice_t *from = slice_at(sl, ns, pid, int_of(e, "tid"), ns_of(e, "ts"));
    int fin = 0;
    for (size_t j = 0; j < len; j++) {
      json_object *f = json_object_array_get_idx(ev, j);
      if (strcmp(str_of(f, "ph"), "f") || int_of(f, "id") != id) continue;
      fin++;
      cr_assert_str_eq(str_of(f, "bp"), "e");
      cr_assert_eq(int_of(f, "pid"), gpid);
      const tslice_t *to = slice_at(sl, ns, gpid, int_of(f, "tid"), ns_of(f, "ts"));
      cr_assert_eq(to->npk, 1);
      cr_assert_eq(to->queue, from->queue);
      int in = 0;
      for (int k = 0; k < from->npk; k++) in += from->pk[k] == to->pk[0];
      cr_assert_eq(in, 1, "flow %lld: packet %lld not in its submission", (long long)id,
                   (long long)to->pk[0]);
    }
    cr_assert_eq(fin, 1, "flow %lld has %d finishes", (long long)id, fin);
  }
  cr_assert_eq(flows, 12);
  int fins = 0;
  for (size_t i = 0; i < len; i++) fins += !strcmp(str_of(json_object_array_get_idx(ev, i), "ph"), "f");
  cr_assert_eq(fins, 12);
  json_object_put(root);
  hsad_queue_destroy(q2);
  th_finish(&m.e, q, m.p);
}

/* Records against what else reports the same packets: device start/end against
 * hsad_completion_times (the ROCr timestamp domain; the record is on hsad_now_ns's clock, one
 * offset for the queue, so both ends differ by the same amount and the duration is equal; both
 * clocks are CLOCK_MONOTONIC under kfd-emu, so the offset is small), the device start after the
 * host submit start; hm_lds's 32768 LDS bytes; records of hsad_prepared_dispatch and
 * hsad_variant_dispatch (the variant's kernel object). */
Test(monitor, records_match_completion_times_lds_prepared_and_variant) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *kp = mon_kernel(&m, "hm_plain"), *kl = mon_kernel(&m, "hm_lds");
  hsad_program_t *p2;
  TH_OK(hsad_program_load_file(m.e.dev, MON_FIXTURE, &p2));
  const hsad_device_kernel_t *kp2;
  TH_OK(hsad_program_kernel(p2, "hm_plain", &kp2));
  cr_assert_neq(hsad_device_kernel_desc(kp)->kernel_object,
                hsad_device_kernel_desc(kp2)->kernel_object);
  hsad_queue_t *q = mon_queue(&m, true, 0);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.no_alerts = true}));
  hsad_launch_t l = {.dims = 1, .grid = {256}, .block = {64}, .args = m.args, .arg_count = 1};
  hsad_completion_t c[4];
  uint64_t id[4];
  /* 0: hsad_kernel_dispatch of hm_lds */
  TH_OK(hsad_kernel_dispatch(q, kl, &l, th_in(TH_SEC), &c[0], &id[0]));
  /* 1, 2: a prepared launch twice */
  hsad_prepared_launch_t *pl;
  hsad_launch_t lp = {.dims = 1, .grid = {512}, .block = {128}, .args = m.args, .arg_count = 1};
  TH_OK(hsad_launch_prepare(q, kp, &lp, &pl));
  TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), &c[1], &id[1]));
  TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), &c[2], &id[2]));
  /* 3: a variant set of two loads of hm_plain (equal metadata: variant 0) */
  const hsad_device_kernel_t *vk[2] = {kp2, kp};
  hsad_variant_set_t *set;
  TH_OK(hsad_variant_set_create(vk, 2, &set));
  TH_OK(hsad_variant_dispatch(q, set, &l, th_in(TH_SEC), &c[3], &id[3]));
  TH_OK(hsad_completion_wait_all(c, 4, th_in(10 * TH_SEC)));
  hsad_dispatch_record_t r[8];
  uint32_t n;
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, NULL));
  cr_assert_eq(n, 4);
  static const char *const kn[4] = {"hm_lds", "hm_plain", "hm_plain", "hm_plain"};
  const uint64_t ko[4] = {hsad_device_kernel_desc(kl)->kernel_object,
                          hsad_device_kernel_desc(kp)->kernel_object,
                          hsad_device_kernel_desc(kp)->kernel_object,
                          hsad_device_kernel_desc(kp2)->kernel_object};
  static const uint32_t grid[4] = {256, 512, 512, 256}, wg[4] = {64, 128, 128, 64},
                        lds[4] = {32768, 0, 0, 0};
  int64_t offset = 0;
  for (uint32_t i = 0; i < 4; i++) {
    cr_assert_eq(r[i].packet_id, id[i], "record %u", i);
    cr_assert_str_eq(r[i].kernel, kn[i]);
    cr_assert_eq(r[i].kernel_object, ko[i], "record %u", i);
    cr_assert_eq(r[i].grid[0], grid[i]);
    cr_assert_eq(r[i].workgroup[0], wg[i]);
    cr_assert_eq(r[i].group_segment_size, lds[i], "record %u: %u LDS bytes", i,
                 r[i].group_segment_size);
    cr_assert_eq(r[i].device_times, true);
    uint64_t s, e;
    TH_OK(hsad_completion_times(&c[i], &s, &e));
    cr_assert_eq(r[i].end_ns - r[i].start_ns, e - s, "record %u: duration", i);
    int64_t d = (int64_t)(s - r[i].start_ns);
    cr_assert_eq((int64_t)(e - r[i].end_ns), d, "record %u: one offset for both ends", i);
    if (i == 0) offset = d;
    cr_assert_eq(d, offset, "record %u: the queue's one offset", i);
    cr_assert_lt(d < 0 ? -d : d, 100000, "offset %lld ns between two CLOCK_MONOTONIC readings",
                 (long long)d);
    cr_assert_geq(r[i].start_ns, r[i].submit_start_ns, "record %u: device start before submit", i);
    cr_assert_leq(r[i].start_ns, r[i].end_ns);
  }
  cr_assert_eq(r[0].vgpr_count, 8);
  cr_assert_eq(r[1].submit_start_ns < r[2].submit_start_ns, true);
  hsad_launch_destroy(pl);
  hsad_variant_set_destroy(set);
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  hsad_queue_destroy(q);
  hsad_program_destroy(p2);
  th_finish(&m.e, NULL, m.p);
}

/* Alert delivery: without a callback, one line on stderr (fd 2 captured) once per (kernel,
 * reason) for the process, however many dispatches and queues; with a callback, a second
 * queue's first dispatch of the same kernel raises nothing; hsad_monitor_alerts_reset makes it
 * raisable again, by the first dispatch on a queue whose monitor meets the kernel afresh. */
Test(monitor, alerts_stderr_once_across_queues_and_reset) {
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *k = mon_kernel(&m, "hm_spill11");
  static const char want[] = "kernel hm_spill11: 5 spilled registers (5 VGPR + 0 SGPR) are 10% "
                             "of its 49 registers (40 VGPR + 0 AGPR + 9 SGPR), above the 10% "
                             "threshold";
  /* stderr: two queues, 3 dispatches each */
  char path[] = "/tmp/hsad-stderr-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  cr_assert(saved >= 0);
  cr_assert_eq(dup2(fd, 2), 2);
  hsad_queue_t *q1 = mon_queue(&m, false, 0), *q2 = mon_queue(&m, false, 0);
  TH_OK(hsad_queue_monitor_enable(q1, &(hsad_monitor_options_t){.occupancy_percent = 1}));
  TH_OK(hsad_queue_monitor_enable(q2, &(hsad_monitor_options_t){.occupancy_percent = 1}));
  mon_run(&m, q1, k, 1, G1, B1, 3, NULL);
  mon_run(&m, q2, k, 1, G1, B1, 3, NULL);
  fflush(stderr);
  cr_assert_eq(dup2(saved, 2), 2);
  close(saved);
  char buf[2048] = "";
  ssize_t got_bytes = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  unlink(path);
  cr_assert_geq(got_bytes, 0);
  buf[got_bytes] = 0;
  char line[1600];
  /* kfd-emu's once per kernel (the fixture has neither source nor twin), then the spill */
  snprintf(line, sizeof line, "hsad: alert emu-no-code: %s\nhsad: alert spill-ratio: %s\n",
           MON_NO_CODE("hm_spill11"), want);
  cr_assert_str_eq(buf, line);
  hsad_queue_destroy(q1);
  hsad_queue_destroy(q2);

  /* a callback: already raised for the process, so nothing on a third queue */
  got_n = 0;
  hsad_queue_t *q3 = mon_queue(&m, false, 0);
  TH_OK(hsad_queue_monitor_enable(q3, &(hsad_monitor_options_t){.occupancy_percent = 1,
                                                                 .alert = on_alert}));
  mon_run(&m, q3, k, 1, G1, B1, 2, NULL);
  cr_assert_eq(got_n, 0);
  /* reset: q3's monitor met the kernel already (nothing new there), a fresh queue raises it
   * once more, once */
  hsad_monitor_alerts_reset();
  mon_run(&m, q3, k, 1, G1, B1, 2, NULL);
  cr_assert_eq(got_n, 0);
  hsad_queue_t *q4 = mon_queue(&m, false, 0);
  TH_OK(hsad_queue_monitor_enable(q4, &(hsad_monitor_options_t){.occupancy_percent = 1,
                                                                 .alert = on_alert}));
  uint64_t ids[3];
  mon_run(&m, q4, k, 1, G1, B1, 3, ids);
  cr_assert_eq(got_n, 1);
  cr_assert_eq(got[0].reason, HSAD_ALERT_SPILL_RATIO);
  cr_assert_eq(got[0].queue, q4);
  cr_assert_eq(got[0].packet_id, ids[0]);
  cr_assert_str_eq(got_kernel[0], "hm_spill11");
  cr_assert_str_eq(got_msg[0], want);
  hsad_queue_destroy(q3);
  th_finish(&m.e, q4, m.p);
}

/* issue 18's untested path: the drain of a profiling queue that faulted (KFD_EMU_FAULT_KERNEL
 * on hm_spill10). Two completed dispatches keep their device times; the faulting one and the
 * one behind it are drained at once without times (their timestamp signals never complete),
 * nothing is dropped, the drain does not wait, and a second drain finds nothing. */
Test(monitor, drain_of_a_faulted_profiling_queue, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "hm_spill10", 1);
  mon_env_t m;
  mon_open(&m);
  const hsad_device_kernel_t *kp = mon_kernel(&m, "hm_plain"), *ks = mon_kernel(&m, "hm_spill10");
  hsad_queue_t *q = mon_queue(&m, true, 0);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.no_alerts = true}));
  uint64_t ids[2];
  mon_run(&m, q, kp, 1, G1, B1, 2, ids);
  hsad_launch_t l = {.dims = 1, .grid = {256}, .block = {64}, .args = m.args, .arg_count = 1};
  uint64_t bad, behind;
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, ks, &l, th_in(TH_SEC), NULL, &bad));
  TH_OK(hsad_kernel_dispatch(q, kp, &l, th_in(TH_SEC), &c, &behind));
  char msg[512];
  TH_ERR_IS(hsad_completion_wait(&c, th_in(10 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s",
            th_fault_msg(q, msg, sizeof msg));
  hsad_dispatch_record_t r[8];
  uint32_t n = 0;
  uint64_t dropped = 1, t0 = hsad_now_ns();
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
  cr_assert_lt(hsad_now_ns() - t0, TH_SEC, "the drain of a faulted queue does not wait");
  cr_assert_eq(n, 4);
  cr_assert_eq(dropped, 0);
  const uint64_t want_id[4] = {ids[0], ids[1], bad, behind};
  const char *const want_k[4] = {"hm_plain", "hm_plain", "hm_spill10", "hm_plain"};
  for (uint32_t i = 0; i < 4; i++) {
    cr_assert_eq(r[i].packet_id, want_id[i], "record %u", i);
    cr_assert_str_eq(r[i].kernel, want_k[i]);
    cr_assert_eq(r[i].device_times, i < 2, "record %u device times %d", i, r[i].device_times);
    if (i < 2) cr_assert(r[i].start_ns <= r[i].end_ns);
    else cr_assert(r[i].start_ns == 0 && r[i].end_ns == 0);
  }
  TH_OK(hsad_queue_monitor_drain(q, r, 8, &n, &dropped));
  cr_assert_eq(n, 0);
  hsad_queue_destroy(q);
  hsad_program_destroy(m.p);
  TH_OK(hsad_runtime_close(m.e.rt));
}
