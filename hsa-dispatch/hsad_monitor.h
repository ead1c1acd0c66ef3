/* hsad_monitor.h - dispatch monitoring, alerts and trace export (issue 9, "Monitoring and
 * traces"). Included by hsad.h.
 *
 * Monitoring is off by default. Enabled on a queue (hsad_queue_monitor_enable) or for every
 * queue created afterwards (hsad_monitor_enable_process), each kernel dispatch submitted through
 * hsad_kernel_dispatch, hsad_prepared_dispatch, hsad_variant_dispatch, hsad_queue_dispatch_batch
 * (one record per entry, recorded after the batch's doorbell) or a graph launch (fusion/: one
 * record per kernel node, fused or sequential, through hsad_submit.h's monitor calls) leaves one
 * record in the queue's record ring: a bounded multi-producer ring (one sequence number per
 * cell, Vyukov's bounded queue) that never blocks the submitter: when it is full the record is
 * dropped and counted. Barrier packets leave no record. Graph packets carry only their
 * precomputed completion signal (no per-dispatch timestamp signal), so their records have no
 * device times even on a profiling queue.
 *
 * Cost: disabled, the submit path tests q->monitor once (one predictable branch). Enabled, a
 * submit adds two clock reads, a ring cell, and, the first time a (kernel, workgroup size, LDS)
 * is seen on the queue, a lookup of the kernel under the runtime lock and its occupancy
 * (hsad_kernel_pressure_at), kept in a per-queue table of HSAD_MONITOR_KERNELS entries.
 *
 * Alerts (hsad_monitor_alert_t) are delivered once per (kernel name, reason) for the whole
 * process, never per dispatch: to options.alert, or as one line on stderr when it is NULL.
 * Spill and occupancy alerts are raised by the first dispatch of the kernel (on the submitting
 * thread); scratch alerts when a completed record is drained (or the queue is destroyed or its
 * monitoring disabled, which process the records still in the ring for alerts).
 *
 * NVIDIA queues (nvidia/nv_monitor.c, issue 22): the same calls; records of hsad_kernel_dispatch
 * (and batches) with vgpr_count = registers per thread (CU_FUNC_ATTRIBUTE_NUM_REGS),
 * private_segment_size = local bytes per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
 * group_segment_size = static + dynamic shared bytes, waves_per_simd = resident warps per SM,
 * occupancy_percent = resident threads per SM (cuOccupancyMaxActiveBlocksPerMultiprocessor x
 * block) per the SM's maximum; the other register and scratch fields 0. On a profiling queue
 * every monitored dispatch is timed by a cuEventRecord pair (256 kept: drain at least that
 * often). HSAD_ALERT_SPILL_RATIO when the kernel has local bytes (value: bytes per thread,
 * threshold 0); HSAD_ALERT_LOW_OCCUPANCY as above on that occupancy. Graph launches (CUDA
 * graphs, nvidia/nv_graph.c) leave one record per kernel node in the monitor of the queue the
 * node was recorded on: sequential, each node's own launch (timed on a profiling queue); fused,
 * every node's record has the one cuGraphLaunch's dispatch id (of the exec's first queue) and
 * host submit interval, and, when that queue profiles, the graph's device start and end (a
 * cuEventRecord pair around the launch: CUDA does not time a graph's nodes apart). Available in
 * the build without AMD too (make BACKENDS=nvidia), trace export included.
 */
#ifndef HSAD_MONITOR_H
#define HSAD_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hsad_queue hsad_queue_t;

/* Kernels (kernel object, workgroup size, group segment size) a queue's monitor describes;
 * dispatches of further ones are recorded with kernel "?" and no register figures. */
#define HSAD_MONITOR_KERNELS 256

typedef enum hsad_alert_reason {
  /* (vgpr_spill_count + sgpr_spill_count) x 100 > spill_ratio_percent x (vgpr_count +
   * agpr_count + sgpr_count): more spilled registers than the threshold's share of the
   * registers the kernel allocates (metadata .vgpr_spill_count etc.). */
  HSAD_ALERT_SPILL_RATIO = 1,
  /* resident work-items per CU at this workgroup size x 100 < occupancy_percent x the best
   * workgroup size's (hsad_pressure_row_t.work_items_per_cu / best_work_items_per_cu). */
  HSAD_ALERT_LOW_OCCUPANCY = 2,
  /* the queue's scratch (amd_queue_t.scratch_backing_memory_byte_size) after a dispatch that
   * uses a private segment is above scratch_limit bytes. */
  HSAD_ALERT_SCRATCH_LIMIT = 3,
  /* ROCr grew the queue's scratch for a dispatch: its private segment size per work-item was
   * above the queue's scratch_wave64_lane_byte_size at submit (or the queue had none), and the
   * queue's scratch_backing_memory_byte_size grew between submit and drain (ROCr's dynamic
   * scratch: the CP stops the queue, ROCr allocates more and resumes it). */
  HSAD_ALERT_SCRATCH_GROWTH = 4,
  /* kfd-emu (no GPU) ran the kernel through a host twin because it has no OpenCL C source
   * (a HIP kernel, a code object built elsewhere without KFD_EMU_CL_SOURCE), or because
   * KFD_EMU_KERNEL_MODE=twin asked for twins first: what ran is the twin's C, not the kernel's
   * code (issue 20). Message: kfd-emu's line, "ran host twin of 'saxpy' (no source)".
   * value and threshold 0. Raised by the first dispatch of the kernel. */
  HSAD_ALERT_EMU_HOST_TWIN = 5,
  /* kfd-emu has neither source nor twin for the kernel: its dispatches are queue errors
   * (ILLEGAL_INSTRUCTION), or complete unexecuted with KFD_EMU_NO_TWIN=noop. Message: kfd-emu's,
   * naming the kernel and both remedies (carry or name the source, give a twin). value and
   * threshold 0. Raised by the first dispatch of the kernel. */
  HSAD_ALERT_EMU_NO_CODE = 6,
} hsad_alert_reason_t;

/* How a dispatch's kernel runs (issue 20; hsad_dispatch_record_t.execution): kfd-emu's
 * kfd_emu_kernel_mode answer (hsad_emu_abi.h) for its kernel object, asked once per
 * kernel when the monitor first describes it. */
typedef enum hsad_execution {
  HSAD_EXECUTION_DEVICE = 0,          /* a GPU runs the code object (the thunk is no kfd-emu) */
  HSAD_EXECUTION_EMU_SOURCE = 1,      /* kfd-emu: from its OpenCL C source through POCL */
  HSAD_EXECUTION_EMU_TWIN = 2,        /* kfd-emu: a host twin (HSAD_ALERT_EMU_HOST_TWIN) */
  HSAD_EXECUTION_EMU_NONE = 3,        /* kfd-emu: neither (HSAD_ALERT_EMU_NO_CODE) */
  HSAD_EXECUTION_EMU_BUILD_FAILED = 4,/* kfd-emu: source POCL cannot build (a queue error) */
  HSAD_EXECUTION_UNKNOWN = 5,         /* kernel "?" (table full), or kfd-emu cannot find it */
} hsad_execution_t;

/* "device", "emu-source", "emu-twin", "emu-none", "emu-build-failed", "unknown". */
const char *hsad_execution_name(hsad_execution_t execution);

/* Name of a reason: "spill-ratio", "low-occupancy", "scratch-limit", "scratch-growth",
 * "emu-host-twin", "emu-no-code". */
const char *hsad_alert_reason_name(hsad_alert_reason_t reason);

typedef struct hsad_monitor_alert {
  hsad_alert_reason_t reason;
  const char *kernel;            /* kernel name; valid during the callback */
  hsad_queue_t *queue;
  uint64_t packet_id;            /* the dispatch that raised it */
  uint64_t value;                /* percent (spill ratio, occupancy) or bytes (scratch) */
  uint64_t threshold;            /* the option it crossed, same unit */
  const char *message;           /* one line without newline; valid during the callback */
} hsad_monitor_alert_t;

/* Called once per (kernel, reason), on the submitting or draining thread, with no library lock
 * held; it must not enable or disable monitoring of the queue. Callbacks for different
 * (kernel, reason) pairs may run concurrently on several threads (two threads submitting or
 * draining on different queues, or submitting on one): the callback must be thread-safe. */
typedef void (*hsad_monitor_alert_fn)(const hsad_monitor_alert_t *alert, void *user);

/* Monitoring options; zero-initialise and set what you need. */
typedef struct hsad_monitor_options {
  uint32_t capacity;             /* records in the ring, a power of two; 0: 4096 */
  uint32_t spill_ratio_percent;  /* HSAD_ALERT_SPILL_RATIO threshold; 0: 10 */
  uint32_t occupancy_percent;    /* HSAD_ALERT_LOW_OCCUPANCY threshold; 0: 50 */
  uint64_t scratch_limit;        /* HSAD_ALERT_SCRATCH_LIMIT threshold in bytes; 0: no alert */
  bool no_alerts;                /* records only */
  hsad_monitor_alert_fn alert;   /* NULL: "hsad: alert <reason>: <message>" on stderr */
  void *alert_user;
} hsad_monitor_options_t;

/* One dispatch as submitted. Times are hsad_now_ns (CLOCK_MONOTONIC ns); device times are the
 * profiling timestamps (hsa_amd_profiling_get_dispatch_time) moved onto that clock by an offset
 * measured when monitoring was enabled (hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP)). */
typedef struct hsad_dispatch_record {
  hsad_queue_t *queue;
  uint64_t packet_id;
  const char *kernel;            /* .name; owned by the queue's monitor: valid until monitoring
                                    of the queue is disabled or the queue destroyed. "?" when
                                    the monitor's kernel table was full */
  uint64_t kernel_object;        /* packet kernel_object */
  uint16_t dims;                 /* packet setup dimensions */
  uint16_t workgroup[3];         /* packet workgroup_size_x/y/z, work-items */
  uint32_t grid[3];              /* packet grid_size_x/y/z, work-items */
  uint32_t private_segment_size; /* packet: scratch bytes per work-item */
  uint32_t group_segment_size;   /* packet: LDS bytes per workgroup (fixed + dynamic) */
  uint32_t vgpr_count, agpr_count, sgpr_count;        /* metadata */
  uint32_t vgpr_spill_count, sgpr_spill_count;        /* metadata */
  uint32_t waves_per_simd;       /* predicted at this workgroup size and LDS (0: no model) */
  uint32_t occupancy_percent;    /* resident work-items per CU, percent of the kernel's best
                                    workgroup size (100: best; 0: no model) */
  uint64_t queue_scratch_before; /* amd_queue_t.scratch_backing_memory_byte_size at submit */
  uint64_t queue_scratch_after;  /* the same when drained */
  uint32_t thread_id;            /* submitting thread (gettid) */
  uint64_t submit_start_ns, submit_end_ns; /* around the submit call's work: from before the
                                    reservation to after the doorbell; the same for every
                                    record of one batch or of one queue's part of a graph
                                    launch (one submission) */
  bool device_times;             /* start_ns/end_ns valid (the queue profiles and the times
                                    were still held: a profiling queue keeps them for `size`
                                    packets) */
  uint64_t start_ns, end_ns;     /* device execution */
  hsad_execution_t execution;    /* how its kernel runs: a GPU, or kfd-emu's source mode, a
                                    host twin or neither */
} hsad_dispatch_record_t;

/* Starts monitoring `queue` (options NULL: defaults). Not concurrent with dispatches, drains or
 * destruction of the same queue (as hsad_queue_destroy). Enabling an enabled queue with the
 * same capacity (after defaults) replaces its options and keeps its records and kernel table;
 * with a different capacity it is hsad_queue_monitor_disable then a fresh enable: the records
 * still in the ring are processed for alerts and discarded, the kernel table starts empty.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL queue, capacity not a power of two or above 2^24),
 * HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_queue_monitor_enable(hsad_queue_t *queue, const hsad_monitor_options_t *options);

/* Stops monitoring `queue`: records still in the ring are processed for alerts and discarded,
 * kernel names of drained records become invalid. Same concurrency rule as enable. NULL or a
 * queue without monitoring: nothing. */
void hsad_queue_monitor_disable(hsad_queue_t *queue);

/* Monitoring of every queue created after this call (options NULL: defaults; copied), until
 * hsad_monitor_disable_process (which leaves queues already monitored as they are).
 * Errors: as hsad_queue_monitor_enable's option checks. Thread-safe. */
hsad_status_t hsad_monitor_enable_process(const hsad_monitor_options_t *options);
void hsad_monitor_disable_process(void);

/* Moves up to `capacity` records of `queue`, oldest first, into out_records and sets
 * *out_count. On a profiling queue it stops at the first record whose dispatch has not
 * completed yet (its device times are filled in by a later drain), unless the queue has
 * failed. Scratch alerts are raised here. One drainer at a time per queue (callers serialise);
 * concurrent with dispatches. *out_dropped (NULL ok): records dropped because the ring was full
 * since the previous drain.
 * Errors: HSAD_ERR_INVALID_ARGUMENT, one cause each ("hsad_queue_monitor_drain: NULL queue", NULL
 * out_count, "NULL out_records with capacity 4"),
 * HSAD_ERR_UNSUPPORTED (monitoring is not enabled on the queue). */
hsad_status_t hsad_queue_monitor_drain(hsad_queue_t *queue, hsad_dispatch_record_t *out_records,
                                       uint32_t capacity, uint32_t *out_count,
                                       uint64_t *out_dropped);

/* Forgets which (kernel, reason) alerts were raised, so each can be raised once more: a
 * scratch alert by the next record drained that crosses it; a spill or occupancy alert by the
 * first dispatch of the kernel (at a workgroup size and LDS) on a queue whose monitor has not
 * described it yet (a queue monitored after the reset, or re-enabled with another capacity): a
 * monitor raises those when it first describes a kernel, never again. Thread-safe. */
void hsad_monitor_alerts_reset(void);

/* ------------------------------------------------------------------------------------------ */
/* Trace export: Chrome trace-event JSON (Perfetto's UI and chrome://tracing open it)           */

/* A trace being collected: records copied in, written as one JSON file. Not thread-safe. */
typedef struct hsad_trace hsad_trace_t;

hsad_status_t hsad_trace_create(hsad_trace_t **out_trace);
void hsad_trace_destroy(hsad_trace_t *trace);

/* Copies `count` records (kernel names too) into the trace. A record's queue must be alive
 * during the call (its device and hsa_queue_t id name the track).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL trace, or records NULL with count > 0),
 * HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_trace_add(hsad_trace_t *trace, const hsad_dispatch_record_t *records,
                             size_t count);

/* Writes the trace to `path` as {"traceEvents": [...], "displayTimeUnit": "ns"}. Tracks are
 * named as rocprofv3 names them (rocprofiler-sdk, source/lib/output/generatePerfetto.cpp,
 * write_perfetto: "THREAD <n> (<tid>)" for host threads; "COMPUTE <label> [<index>] QUEUE
 * [<n>] <type>" per queue with --group-by-queue, label/index/type from metadata.cpp's
 * get_agent_index at the default agent indexing, logical_node: "Agent", the agent's
 * logical_node_id (its position among all KFD topology nodes, CPUs and GPUs: the KFD node id
 * HSA_AGENT_INFO_NODE), "GPU"; <n> counts the agent's queues from 0):
 * - process "hsa-dispatch" (pid = getpid()) with one track per submitting thread (tid = its
 *   thread id) named "THREAD <n> (<tid>)": n = 0 for the process's main thread (tid == pid),
 *   1, 2, ... for the others in ascending thread id. One complete slice (ph "X") per host
 *   submission, from submit_start_ns to submit_end_ns: "submit <kernel>" (args: the record)
 *   for a single dispatch, "submit <n> dispatches" (args: queue, dispatches, packet_ids,
 *   kernels, thread_id, submit_start_ns, submit_end_ns) for the records of one batch or one
 *   queue's part of a graph launch, which share their submit interval. A thread's submissions
 *   follow each other, so its slices never overlap;
 * - one process per device (pid = 2^30 + device index, named "GPU <index> <name>", e.g.
 *   "GPU 0 gfx90a") with one track per queue, "COMPUTE Agent [<KFD node id>] QUEUE [<n>] GPU",
 *   n numbering the device's queues in the trace from 0 in ascending hsa_queue_t.id (creation
 *   order; rocprofv3 numbers them in its hash set's order); one slice "<kernel>" per record
 *   with device times, start_ns to end_ns. Dispatches that overlap on a queue (no BARRIER bit)
 *   go to further tracks "... GPU lane <l>" so that slices on one track never overlap or touch;
 * - a flow arrow per record with device times: ph "s" at the middle of its submit slice, ph
 *   "f" (bp "e") at the middle of its dispatch slice, same id (1, 2, ... in the order records
 *   were added); a submission of several dispatches starts one arrow to each.
 * Timestamps in us with 3 decimals (ns exact).
 * Errors: HSAD_ERR_INVALID_ARGUMENT ("hsad_trace_write: NULL trace", or NULL path),
 * HSAD_ERR_RESOURCE_EXHAUSTED (more
 * than 64 dispatches overlap on one queue: no lane left), HSAD_ERR_IO (the file cannot be
 * written: path and errno text), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_trace_write(const hsad_trace_t *trace, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* HSAD_MONITOR_H */
