/* cp.c - user-mode AQL queues and the software command processor (CP) of each emulated GPU.
 *
 * One CP thread per queue, so queues progress independently as a GPU's hardware queues do (a
 * long kernel on one queue does not hold another back). Each processes packets whose
 * id is at most the last value ROCr stored into the queue's doorbell, as hardware does: a
 * packet published but never rung stays unprocessed. Per packet, in hardware order:
 *   1. wait for the header type to become valid (not INVALID);
 *   2. honour the BARRIER bit (earlier packets of this queue completed);
 *   3. take a copy of the packet (launch) and execute the copy (kernel dispatch through a
 *      host twin, barrier-AND/-OR, AMD vendor packets);
 *   4. write the header back to INVALID and advance read_dispatch_id (release);
 *   5. if a completion signal is set: write start_ts/end_ts when the queue has profiling
 *      enabled, atomically decrement the value by 1, and if the signal has an event mailbox,
 *      store its event id there and wake the event.
 * KFD_EMU_READ_INDEX=launch moves step 4 before execution: the slots go back to the producer
 * (INVALID, read index past them) as soon as the packets are launched, as the HSA
 * specification allows ("an application should only rely on the published specification",
 * ROCR-Runtime #105); only the completion signal says a packet completed. The BARRIER bit
 * and barrier packets still hold later launches until earlier packets completed.
 * Kernel dispatches without the BARRIER bit may run in any order on hardware: by default
 * consecutive ones are executed last-first (KFD_EMU_ORDER=inorder turns this off), so a
 * missing barrier bit shows up here as it would on a GPU.
 *
 * Errors are reported as the CP does, through amd_queue_t.queue_inactive_signal: the CP
 * stores an error code there and wakes its event; ROCr's queue error handler turns it into the
 * HSA status of the queue's error callback. The faulting queue stops processing packets.
 * Scratch follows ROCr's dynamic scratch protocol: a dispatch needing more private segment
 * than the queue has raises "insufficient scratch" (0x1 / 0x401), ROCr grows the queue's
 * scratch and stores 0 to resume.
 *
 * Idle back-off: after the last progress the CP yields for 20 us, then sleeps on a futex for
 * 2 us doubling up to 1 ms (20 ms once idle for 50 ms). Host calls that mean "someone waits
 * for the GPU" (event waits, SetEvent, queue creation) wake it for one immediate scan.
 */
#define _GNU_SOURCE
#include "tools/kfd-emu/emu.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DOORBELL_NONE UINT64_MAX
#define REORDER_WINDOW 8

typedef enum { Q_RUNNING, Q_WAIT_SCRATCH, Q_FAULTED } q_state_t;

struct emu_queue {
  emu_queue_t *next;
  HSA_QUEUEID id;
  emu_gpu_t *gpu;
  uint8_t *ring;
  uint32_t size; /* packets, a power of two */
  amd_queue_t *amdq;
  volatile uint64_t *read_ptr;
  _Atomic uint64_t *doorbell;
  uint32_t doorbell_slot;
  _Atomic bool suspended; /* QueuePercentage 0 (ROCr suspends a queue after an error) */
  pthread_t thread;       /* this queue's CP thread: queues progress independently */
  _Atomic bool stop;      /* hsaKmtDestroyQueue: preempt (see run_dispatch) and exit */
  const char *_Atomic running; /* name of the kernel the CP is executing, NULL between */
  _Atomic bool orphan;    /* exchanged to true by the CP thread as it ends and by an abandoning
                             queue_free: the second one frees q (seq_cst exchanges) */
  uint64_t rung;       /* highest doorbell value seen + 1 (0: never rung) */
  uint64_t unrung_id;  /* a valid packet beyond the doorbell ... */
  uint64_t unrung_since; /* ... first seen at this time (ns), 0 when none */
  uint64_t unrung_warned; /* strict doorbell: id + 1 of the packet already reported */
  uint64_t or_warned;     /* id + 1 of the all-zero barrier-OR already reported */
  int watch;              /* KFD_EMU_RING_WATCH: index of the ring's watch, -1: none */
  q_state_t state;
  /* Packets the CP took from the ring and has not completed: their copies, their kernels
   * (dispatches), the id of the first and whether the read index already passed them
   * (KFD_EMU_READ_INDEX=launch). Owned by the CP (under gpu->lock). */
  _Alignas(64) uint8_t held[REORDER_WINDOW][64]; /* aligned as a ring slot */
  const emu_kernel_t *held_k[REORDER_WINDOW];
  uint64_t held_id;
  uint32_t held_n;
  bool held_retired;
  uint64_t held_t0;
  uint8_t lds[64 * 1024];
};

static _Atomic uint64_t next_queue_id = 1;

/* ---- wake-ups ------------------------------------------------------------------------ */

/* Wakes every sleeping CP thread of the GPU (one futex word per GPU, shared by its queues'
 * threads). */
static void kick(emu_gpu_t *g) {
  atomic_fetch_add_explicit(&g->kick, 1, memory_order_seq_cst);
  if (atomic_load_explicit(&g->sleeping, memory_order_seq_cst))
    syscall(SYS_futex, &g->kick, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

void emu_cp_kick_all(void) {
  for (uint32_t i = 0; i < emu.cfg.gpus; i++) kick(&emu.gpus[i]);
}

/* ---- signals and errors -------------------------------------------------------------- */

static amd_signal_t *sig(hsa_signal_t s) { return (amd_signal_t *)(uintptr_t)s.handle; }

static int64_t sig_load(hsa_signal_t s) {
  return atomic_load_explicit((_Atomic int64_t *)&sig(s)->value, memory_order_acquire);
}

/* The queue's id as ROCr gives it to the user (hsa_queue_t.id), for messages. */
static unsigned long long qid(const emu_queue_t *q) {
  return (unsigned long long)q->amdq->hsa_queue.id;
}

static void queue_error(emu_queue_t *q, uint32_t code, const char *what) {
  if (emu.cfg.verbose || code != EMU_QERR_SCRATCH_WAVE64)
    if (what) emu_log("GPU %u queue %llu: %s", q->gpu->index, qid(q), what);
  q->state = code == EMU_QERR_SCRATCH_WAVE64 || code == EMU_QERR_SCRATCH_WAVE32 ? Q_WAIT_SCRATCH
                                                                                : Q_FAULTED;
  amd_signal_t *s = sig(q->amdq->queue_inactive_signal);
  if (!s) return;
  atomic_store_explicit((_Atomic int64_t *)&s->value, (int64_t)code, memory_order_release);
  emu_signal_notify(s);
}

/* ---- packets -------------------------------------------------------------------------- */

static uint16_t header_of(const void *slot) {
  return atomic_load_explicit((_Atomic uint16_t *)slot, memory_order_acquire);
}

static hsa_signal_t completion_of(const uint8_t *slot) {
  hsa_signal_t s;
  memcpy(&s, slot + 56, sizeof s); /* every AQL packet format keeps it at byte 56 */
  return s;
}

/* Hands slots [id, id + n) back to the producer: header INVALID (release), then the read
 * index past them (release), so a producer that sees the index may rewrite the slots. */
static void retire(emu_queue_t *q, uint64_t id, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    atomic_store_explicit((_Atomic uint16_t *)(q->ring + ((id + i) & (q->size - 1)) * 64),
                          HSA_PACKET_TYPE_INVALID, memory_order_release);
  atomic_store_explicit((_Atomic uint64_t *)q->read_ptr, id + n, memory_order_release);
}

/* Completion of one packet (its copy): profiling timestamps, decrement, event wake-up. */
static void signal_done(emu_queue_t *q, const uint8_t *pkt, uint64_t t0, uint64_t t1) {
  hsa_signal_t cs = completion_of(pkt);
  if (!cs.handle) return;
  amd_signal_t *s = sig(cs);
  if (q->amdq->queue_properties & AMD_QUEUE_PROPERTIES_ENABLE_PROFILING) {
    s->start_ts = t0;
    s->end_ts = t1;
  }
  atomic_fetch_sub_explicit((_Atomic int64_t *)&s->value, 1, memory_order_acq_rel);
  emu_signal_notify(s);
  /* A CP that waits on this signal (a barrier-AND or barrier-value packet on another queue or
   * GPU) re-checks now instead of at the end of its back-off sleep (up to 1 ms): hardware
   * packet processors re-evaluate their dependencies promptly. Costs a futex wake only when a
   * CP sleeps. */
  emu_cp_kick_all();
}

/* Barrier-AND: every dependency at 0; a zero handle counts as the constant 0, satisfied (HSA
 * 1.2 system architecture 2.9.8). Barrier-OR: any dependency at 0; a zero handle counts as a
 * constant non-zero value and never satisfies it (2.9.9; ROCR-Runtime #252). */
static bool deps_ready(const hsa_signal_t *deps, bool and_) {
  for (int i = 0; i < 5; i++) {
    if (!deps[i].handle) continue;
    bool zero = sig_load(deps[i]) == 0;
    if (and_ && !zero) return false;
    if (!and_ && zero) return true;
  }
  return and_;
}

static bool value_cond(int64_t v, int64_t ref, uint32_t c) {
  switch (c) {
  case HSA_SIGNAL_CONDITION_EQ: return v == ref;
  case HSA_SIGNAL_CONDITION_NE: return v != ref;
  case HSA_SIGNAL_CONDITION_LT: return v < ref;
  case HSA_SIGNAL_CONDITION_GTE: return v >= ref;
  }
  return false;
}

/* Checks a kernel dispatch packet the way the CP and SPI do before launching waves. Returns 0,
 * or a queue error code with *why set. */
static uint32_t check_dispatch(emu_queue_t *q, const hsa_kernel_dispatch_packet_t *p,
                               const emu_kernel_t **out_k, char *why, size_t n) {
  uint32_t dims = (p->setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) & 3;
  const uint32_t grid[3] = {p->grid_size_x, p->grid_size_y, p->grid_size_z};
  const uint32_t wg[3] = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z};
  if (dims < 1) {
    snprintf(why, n, "kernel dispatch with setup dimensions 0");
    return EMU_QERR_INVALID_DIM;
  }
  for (uint32_t d = 0; d < 3; d++) {
    bool bad = d < dims ? (grid[d] == 0 || wg[d] == 0) : (grid[d] != 1 || wg[d] != 1);
    if (bad) {
      snprintf(why, n, "kernel dispatch: setup dimensions %u, dimension %u (%c) has grid %u and "
               "workgroup %u (%s)", dims, d, "xyz"[d], grid[d], wg[d],
               d < dims ? "a used dimension needs both >= 1" : "an unused one must have 1 and 1");
      return EMU_QERR_INVALID_DIM;
    }
  }
  if ((uint64_t)wg[0] * wg[1] * wg[2] > 1024) {
    snprintf(why, n, "kernel dispatch: workgroup %ux%ux%u is %llu work-items, above the maximum "
             "of 1024", wg[0], wg[1], wg[2], (unsigned long long)wg[0] * wg[1] * wg[2]);
    return EMU_QERR_GROUP_TOO_LARGE;
  }
  if (p->group_segment_size > sizeof q->lds) {
    snprintf(why, n, "kernel dispatch: group segment %u bytes exceeds the 65536-byte LDS",
             p->group_segment_size);
    return EMU_QERR_INVALID_GROUP_MEM;
  }
  const char *err = NULL;
  const emu_kernel_t *k = emu_kernel_lookup(p->kernel_object, &err);
  if (!k) {
    snprintf(why, n, "kernel dispatch: kernel_object 0x%llx: %s",
             (unsigned long long)p->kernel_object, err);
    return EMU_QERR_INVALID_CODE;
  }
  *out_k = k;
  /* The packet's segment sizes include the descriptor's fixed ones (the CP allocates LDS and
   * scratch from the packet; less than the code was compiled for would let it run over). */
  if (p->group_segment_size < k->group_fixed) {
    snprintf(why, n, "kernel %s: packet group_segment_size %u bytes is below the kernel "
             "descriptor's group_segment_fixed_size %u", k->name, p->group_segment_size,
             k->group_fixed);
    return EMU_QERR_INVALID_GROUP_MEM;
  }
  if (p->private_segment_size < k->private_fixed) {
    snprintf(why, n, "kernel %s: packet private_segment_size %u bytes per work-item is below "
             "the kernel descriptor's private_segment_fixed_size %u", k->name,
             p->private_segment_size, k->private_fixed);
    return EMU_QERR_INVALID_GROUP_MEM;
  }
  /* HSA: the kernarg segment is 16-byte aligned (or the kernel's larger alignment) */
  uint32_t align = k->kernarg_align > 16 ? k->kernarg_align : 16;
  if ((uintptr_t)p->kernarg_address % align) {
    snprintf(why, n, "kernel %s: kernarg_address %p is not %u-byte aligned (HSA: kernarg "
             "segments are 16-byte aligned; .kernarg_segment_align %u)", k->name,
             p->kernarg_address, align, k->kernarg_align);
    return EMU_QERR_INVALID_ARGUMENT;
  }
  if (k->kernarg_size &&
      !emu_mem_gpu_ok(q->gpu->index, (uintptr_t)p->kernarg_address, k->kernarg_size)) {
    if (emu_mem_find((uintptr_t)p->kernarg_address, k->kernarg_size, NULL))
      snprintf(why, n, "kernel %s: kernarg segment %p (%u bytes) is not mapped to GPU %u (no "
               "allow_access for it; KFD_EMU_ACCESS=strict)", k->name, p->kernarg_address,
               k->kernarg_size, q->gpu->index);
    else
      snprintf(why, n,
               "kernel %s: kernarg segment %p (%u bytes) is not in GPU-accessible memory",
               k->name, p->kernarg_address, k->kernarg_size);
    return EMU_QERR_MEMORY_VIOLATION;
  }
  /* Code object v5 hidden arguments a real kernel computes its sizes from (ockl): check them
   * against the packet, so a dispatcher that writes them wrong fails here as it would fail
   * (silently) on hardware. */
  const uint8_t *ka = p->kernarg_address;
  for (uint32_t d = 0; d < 3; d++) {
    uint32_t want_bc = grid[d] / wg[d], v32;
    uint16_t v16;
    if (k->hidden_block_count[d] != UINT32_MAX && k->hidden_block_count[d] + 4 <= k->kernarg_size) {
      memcpy(&v32, ka + k->hidden_block_count[d], 4);
      if (v32 != want_bc) {
        snprintf(why, n, "kernel %s: hidden_block_count_%c at kernarg offset %u is %u, packet "
                 "gives %u", k->name, "xyz"[d], k->hidden_block_count[d], v32, want_bc);
        return EMU_QERR_MEMORY_VIOLATION;
      }
    }
    if (k->hidden_group_size[d] != UINT32_MAX && k->hidden_group_size[d] + 2 <= k->kernarg_size) {
      memcpy(&v16, ka + k->hidden_group_size[d], 2);
      if (v16 != wg[d]) {
        snprintf(why, n, "kernel %s: hidden_group_size_%c at kernarg offset %u is %u, packet "
                 "gives %u", k->name, "xyz"[d], k->hidden_group_size[d], v16, wg[d]);
        return EMU_QERR_MEMORY_VIOLATION;
      }
    }
    if (k->hidden_remainder[d] != UINT32_MAX && k->hidden_remainder[d] + 2 <= k->kernarg_size) {
      memcpy(&v16, ka + k->hidden_remainder[d], 2);
      if (v16 != grid[d] % wg[d]) {
        snprintf(why, n, "kernel %s: hidden_remainder_%c at kernarg offset %u is %u, packet "
                 "gives %u", k->name, "xyz"[d], k->hidden_remainder[d], v16, grid[d] % wg[d]);
        return EMU_QERR_MEMORY_VIOLATION;
      }
    }
  }
  if (k->hidden_grid_dims != UINT32_MAX && k->hidden_grid_dims + 2 <= k->kernarg_size) {
    uint16_t v16;
    memcpy(&v16, ka + k->hidden_grid_dims, 2);
    if (v16 != dims) {
      snprintf(why, n, "kernel %s: hidden_grid_dims at kernarg offset %u is %u, packet gives %u",
               k->name, k->hidden_grid_dims, v16, dims);
      return EMU_QERR_MEMORY_VIOLATION;
    }
  }
  if (p->private_segment_size) {
    /* ROCr publishes the queue's scratch per lane for wave64 (InitScratchSRD). */
    uint64_t per_lane = q->amdq->scratch_wave64_lane_byte_size;
    if (k->wave32) per_lane *= 2;
    if (q->amdq->scratch_backing_memory_byte_size == 0 || per_lane < p->private_segment_size) {
      snprintf(why, n, "kernel %s: needs %u bytes of private segment per work-item, queue has "
               "%llu", k->name, p->private_segment_size, (unsigned long long)per_lane);
      return k->wave32 ? EMU_QERR_SCRATCH_WAVE32 : EMU_QERR_SCRATCH_WAVE64;
    }
  }
  if (emu.cfg.fault_kernel[0] && !strcmp(emu.cfg.fault_kernel, k->name)) {
    snprintf(why, n, "kernel %s: injected fault (KFD_EMU_FAULT_KERNEL)", k->name);
    return EMU_QERR_MEMORY_VIOLATION;
  }
  if (!k->cl_source && !k->twin && !emu.cfg.noop_missing_twin) {
    emu_kernel_no_code_message(k->name, why, n);
    return EMU_QERR_ILLEGAL_INSTRUCTION;
  }
  return 0;
}

/* The GPU whose CP runs on this thread (twins ask about its mappings). */
static _Thread_local uint32_t cp_gpu;

static bool gpu_accessible(const void *p, uint64_t bytes) {
  return emu_mem_gpu_ok(cp_gpu, (uintptr_t)p, bytes);
}

static bool preempted(emu_queue_t *q) {
  return atomic_load_explicit(&q->stop, memory_order_acquire);
}

/* KFD_EMU_DELAY_US: the dispatch takes this long, preemptible as waves are under CWSR: false
 * when the queue was stopped (hsaKmtDestroyQueue) first. Sleeps on the GPU's kick word, which
 * DestroyQueue bumps: no polling. */
static bool delay_preemptible(emu_queue_t *q, uint64_t us) {
  emu_gpu_t *g = q->gpu;
  uint64_t end = emu_now_ns() + us * 1000;
  for (;;) {
    uint32_t k = atomic_load_explicit(&g->kick, memory_order_seq_cst);
    uint64_t now = emu_now_ns();
    if (preempted(q)) return false;
    if (now >= end) return true;
    struct timespec ts = {(time_t)((end - now) / 1000000000), (long)((end - now) % 1000000000)};
    atomic_fetch_add_explicit(&g->sleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g->kick, memory_order_seq_cst) == k && !preempted(q))
      syscall(SYS_futex, &g->kick, FUTEX_WAIT_PRIVATE, k, &ts, NULL, 0);
    atomic_fetch_sub_explicit(&g->sleeping, 1, memory_order_seq_cst);
  }
}

/* Executes one dispatch. Preemption (the queue stopped by hsaKmtDestroyQueue, as the KFD
 * unmaps a queue with an active dispatch: CWSR saves its waves and the destroy discards them)
 * happens at the points a host thread can leave safely: during the injected delay and between
 * twin workgroups; the dispatch is then abandoned (EMU_PREEMPTED: no completion signal, the
 * read index stays). A workgroup already running (a twin call, a POCL kernel) runs to its
 * end: queue_free's preemption timeout covers one that never ends. */
static uint32_t run_dispatch_body(emu_queue_t *q, const hsa_kernel_dispatch_packet_t *p,
                                  const emu_kernel_t *k, char *why, size_t n);
static uint32_t run_dispatch(emu_queue_t *q, const hsa_kernel_dispatch_packet_t *p,
                             const emu_kernel_t *k, char *why, size_t n) {
  atomic_store_explicit(&q->running, k->name, memory_order_release);
  uint32_t r = run_dispatch_body(q, p, k, why, n);
  atomic_store_explicit(&q->running, NULL, memory_order_release);
  return r;
}

static uint32_t run_dispatch_body(emu_queue_t *q, const hsa_kernel_dispatch_packet_t *p,
                                  const emu_kernel_t *k, char *why, size_t n) {
  if (emu.cfg.delay_us && (!emu.cfg.delay_kernel[0] || !strcmp(emu.cfg.delay_kernel, k->name)) &&
      !delay_preemptible(q, emu.cfg.delay_us))
    return EMU_PREEMPTED;
  if (preempted(q)) return EMU_PREEMPTED;
  if (k->cl_source) return emu_cl_dispatch(k, p, q->gpu->index, why, n);
  if (!k->twin) return 0; /* KFD_EMU_NO_TWIN=noop */
  emu_kernel_twin_notice(k);
  kfd_emu_dispatch_t d = {
      .packet = p,
      .kernel_name = k->name,
      .kernarg = p->kernarg_address,
      .kernarg_size = k->kernarg_size,
      .args = k->args,
      .arg_count = k->arg_count,
      .dims = (p->setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) & 3,
      .grid = {p->grid_size_x, p->grid_size_y, p->grid_size_z},
      .block = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z},
      .group_segment = q->lds,
      .gpu_accessible = gpu_accessible,
  };
  uint32_t groups[3]; /* ceil(grid / block) in 64-bit: grid may be up to 2^32 - 1 */
  for (int i = 0; i < 3; i++)
    groups[i] = (uint32_t)(((uint64_t)d.grid[i] + d.block[i] - 1) / d.block[i]);
  kfd_emu_workgroup_t wg;
  for (uint32_t z = 0; z < groups[2]; z++)
    for (uint32_t y = 0; y < groups[1]; y++)
      for (uint32_t x = 0; x < groups[0]; x++) {
        const uint32_t id[3] = {x, y, z};
        for (int i = 0; i < 3; i++) {
          wg.id[i] = id[i];
          wg.base[i] = id[i] * d.block[i];
          uint32_t left = d.grid[i] - wg.base[i];
          wg.size[i] = left < d.block[i] ? left : d.block[i];
        }
        if (preempted(q)) return EMU_PREEMPTED;
        if (p->group_segment_size) memset(q->lds, 0, p->group_segment_size);
        emu_twin_fault_t f;
        int r = emu_twin_call(k->twin, &d, &wg, &f);
        if (r == EMU_TWIN_FAULTED) {
          char what[128];
          emu_twin_fault_describe(&f, what, sizeof what);
          snprintf(why, n, "kernel %s: its twin faulted (%s) in workgroup (%u,%u,%u); reported "
                   "as a memory violation", k->name, what, x, y, z);
          return f.sig == SIGILL ? EMU_QERR_ILLEGAL_INSTRUCTION : EMU_QERR_MEMORY_VIOLATION;
        }
        if (r != 0) {
          snprintf(why, n, "kernel %s: memory violation in workgroup (%u,%u,%u)", k->name, x, y,
                   z);
          return EMU_QERR_MEMORY_VIOLATION;
        }
      }
  return 0;
}

static uint8_t *slot_at(emu_queue_t *q, uint64_t id) {
  return q->ring + (id & (q->size - 1)) * 64;
}

/* Executes the held packets (copies). Returns the number completed: 0 while a barrier waits
 * for its dependencies, or after a queue error. In complete mode the slots are retired here,
 * each just before its completion signal (hardware order: step 4, then 5). */
static uint32_t finish(emu_queue_t *q) {
  char why[1024];
  uint32_t n = q->held_n;
  const uint8_t *pkt = q->held[0];
  uint16_t hdr;
  memcpy(&hdr, pkt, 2);
  uint32_t type = (hdr >> HSA_PACKET_HEADER_TYPE) & 0xff;
  uint64_t t0 = q->held_t0 ? q->held_t0 : emu_now_ns();
  switch (type) {
  case HSA_PACKET_TYPE_KERNEL_DISPATCH:
    /* A run of dispatches without the BARRIER bit: hardware may run them concurrently; by
     * default kfd-emu runs them last-first. */
    for (uint32_t i = n; i-- > 0;) {
      if (!q->held_k[i]) continue; /* a barrier-AND that orders nothing */
      uint32_t err = run_dispatch(q, (const hsa_kernel_dispatch_packet_t *)q->held[i],
                                  q->held_k[i], why, sizeof why);
      /* preempted, or the queue is being destroyed while a workgroup ran (an abandoned queue's
       * ring and signals may be freed by now): the dispatch is dropped, nothing more is
       * touched, and the CP thread exits (cp_main) */
      if (err == EMU_PREEMPTED || preempted(q)) return 0;
      if (err) {
        queue_error(q, err, why);
        return 0;
      }
    }
    break;
  case HSA_PACKET_TYPE_BARRIER_AND:
  case HSA_PACKET_TYPE_BARRIER_OR: {
    const hsa_barrier_and_packet_t *b = (const hsa_barrier_and_packet_t *)pkt;
    if (!deps_ready(b->dep_signal, type == HSA_PACKET_TYPE_BARRIER_AND)) {
      if (type == HSA_PACKET_TYPE_BARRIER_OR && q->or_warned != q->held_id + 1 &&
          !(b->dep_signal[0].handle | b->dep_signal[1].handle | b->dep_signal[2].handle |
            b->dep_signal[3].handle | b->dep_signal[4].handle)) {
        q->or_warned = q->held_id + 1;
        emu_log("GPU %u queue %llu: packet %llu is a barrier-OR whose dep_signal handles are "
                "all 0: it never completes (a zero handle never satisfies an OR, HSA system "
                "architecture 2.9.9)", q->gpu->index, qid(q), (unsigned long long)q->held_id);
      }
      return 0;
    }
    t0 = emu_now_ns();
    break;
  }
  case HSA_PACKET_TYPE_VENDOR_SPECIFIC: {
    const hsa_amd_vendor_packet_header_t *vh = (const hsa_amd_vendor_packet_header_t *)pkt;
    if (vh->AmdFormat == HSA_AMD_PACKET_TYPE_BARRIER_VALUE) {
      const hsa_amd_barrier_value_packet_t *b = (const hsa_amd_barrier_value_packet_t *)pkt;
      if (b->signal.handle && !value_cond(sig_load(b->signal) & b->mask, b->value, b->cond))
        return 0;
      t0 = emu_now_ns();
    }
    /* AMD_AQL_FORMAT_PM4_IB (1): an indirect buffer of PM4 commands (ROCr's ExecutePM4, e.g.
     * cache invalidation after loading code). kfd-emu's memory is coherent: nothing to do. */
    break;
  }
  }
  uint64_t t1 = emu_now_ns();
  q->held_n = 0;
  q->held_t0 = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (!q->held_retired) retire(q, q->held_id + i, 1);
    signal_done(q, q->held[i], t0, t1);
  }
  return n;
}

/* Copies the packet at id (header value h, already read with acquire) into out. With
 * KFD_EMU_PUBLICATION_CHECK_US, re-reads the slot that long after and returns false with *why
 * set when any byte changed: a body written after its header was published, which a real CP
 * may read half-written. */
static bool take(emu_queue_t *q, uint64_t id, uint16_t h, uint8_t out[64], char *why,
                 size_t n) {
  const uint8_t *slot = slot_at(q, id);
  memcpy(out + 2, slot + 2, 62);
  memcpy(out, &h, 2);
  if (!emu.cfg.publication_check_ns) return true;
  uint64_t t = emu_now_ns();
  while (emu_now_ns() - t < emu.cfg.publication_check_ns) {
    if (emu.cfg.publication_check_ns > 200000) usleep(1000);
    else sched_yield();
  }
  uint8_t again[64];
  atomic_thread_fence(memory_order_acquire);
  memcpy(again, slot, 64);
  int first = -1, last = -1;
  for (int i = 0; i < 64; i++)
    if (again[i] != out[i]) {
      if (first < 0) first = i;
      last = i;
    }
  if (first < 0) return true;
  snprintf(why, n, "packet %llu: bytes %d-%d changed after its header was valid (%llu us "
           "later): the body was written after the header was published (publish the header "
           "last, with a release store; KFD_EMU_PUBLICATION_CHECK_US)", (unsigned long long)id,
           first, last, (unsigned long long)(emu.cfg.publication_check_ns / 1000));
  return false;
}

/* Takes the packet at rd (and, for a kernel dispatch, the run of later rung dispatches without
 * the BARRIER bit) from the ring: copies, checks. With KFD_EMU_READ_INDEX=launch the slots are
 * retired now, before anything executes, as the HSA specification allows the packet processor
 * to do once it launched a packet. Returns false when nothing valid is there or on a queue
 * error. */
/* HSA packet header fence scopes: 0 none, 1 agent, 2 system; 3 is reserved (HSA platform
 * system architecture 2.9.1, "packet header"). False with *why set for a reserved one. */
static bool fence_scopes_ok(uint64_t id, uint16_t h, char *why, size_t n) {
  uint32_t acq = (h >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3,
           rel = (h >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3;
  if (acq != 3 && rel != 3) return true;
  snprintf(why, n, "packet %llu: header 0x%04x has the reserved %s fence scope 3 (0 none, 1 "
           "agent, 2 system)", (unsigned long long)id, h, acq == 3 ? "acquire" : "release");
  return false;
}

static bool launch(emu_queue_t *q, uint64_t rd, uint64_t db) {
  uint8_t *slot = slot_at(q, rd);
  uint16_t hdr = header_of(slot);
  uint32_t type = (hdr >> HSA_PACKET_HEADER_TYPE) & 0xff;
  char why[1024];
  if (type == HSA_PACKET_TYPE_INVALID) return false;
  if ((type == HSA_PACKET_TYPE_KERNEL_DISPATCH || type == HSA_PACKET_TYPE_BARRIER_AND ||
       type == HSA_PACKET_TYPE_BARRIER_OR) && !fence_scopes_ok(rd, hdr, why, sizeof why)) {
    queue_error(q, EMU_QERR_INVALID_FORMAT, why);
    return false;
  }
  if (emu.cfg.cp_stall_ms) usleep((useconds_t)(emu.cfg.cp_stall_ms * 1000));
  uint32_t n = 0;
  switch (type) {
  case HSA_PACKET_TYPE_KERNEL_DISPATCH:
    /* Gather the run of dispatches that hardware may execute concurrently. A barrier-AND
     * that orders nothing (no BARRIER bit, no dependency, no completion signal: e.g. the
     * padding after a dispatch whose kernarg segment spans several slots) does not end the
     * run: a packet processor is through it at once, so dispatches on both sides may overlap
     * (HSA 1.2 system architecture 2.9.8). It is held as a no-op (held_k NULL). */
    while (n < REORDER_WINDOW && rd + n <= db) {
      uint8_t *s = slot_at(q, rd + n);
      uint16_t h = n ? header_of(s) : hdr; /* acquire: the body is visible after it */
      uint32_t ty = (h >> HSA_PACKET_HEADER_TYPE) & 0xff;
      bool nop = n && ty == HSA_PACKET_TYPE_BARRIER_AND;
      if (ty != HSA_PACKET_TYPE_KERNEL_DISPATCH && !nop) break;
      if (n && (h & (1u << HSA_PACKET_HEADER_BARRIER))) break;
      if (n && !fence_scopes_ok(rd + n, h, why, sizeof why)) break; /* reported when first */
      if (!take(q, rd + n, h, q->held[n], why, sizeof why)) {
        if (n) break;
        queue_error(q, EMU_QERR_INVALID_FORMAT, why);
        return false;
      }
      if (nop) {
        const hsa_barrier_and_packet_t *b = (const hsa_barrier_and_packet_t *)q->held[n];
        uint64_t any = b->completion_signal.handle;
        for (int i = 0; i < 5; i++) any |= b->dep_signal[i].handle;
        if (any) break; /* a real barrier: processed on its own */
        q->held_k[n++] = NULL;
        continue;
      }
      uint32_t err = check_dispatch(q, (const hsa_kernel_dispatch_packet_t *)q->held[n],
                                    &q->held_k[n], why, sizeof why);
      if (err) {
        if (n) break; /* run what came before; report this one when it is first */
        queue_error(q, err, why);
        return false;
      }
      n++;
      if (emu.cfg.in_order) break;
    }
    break;
  case HSA_PACKET_TYPE_BARRIER_AND:
  case HSA_PACKET_TYPE_BARRIER_OR:
    n = 1;
    break;
  case HSA_PACKET_TYPE_VENDOR_SPECIFIC: {
    const hsa_amd_vendor_packet_header_t *vh = (const hsa_amd_vendor_packet_header_t *)slot;
    if (vh->AmdFormat != HSA_AMD_PACKET_TYPE_BARRIER_VALUE && vh->AmdFormat != 1) {
      snprintf(why, sizeof why, "vendor packet with unknown AMD format %u", vh->AmdFormat);
      queue_error(q, EMU_QERR_INVALID_FORMAT, why);
      return false;
    }
    n = 1;
    break;
  }
  default:
    snprintf(why, sizeof why, "packet %llu has type %u, invalid on a GPU kernel-dispatch queue",
             (unsigned long long)rd, type);
    queue_error(q, EMU_QERR_INVALID_FORMAT, why);
    return false;
  }
  if (type != HSA_PACKET_TYPE_KERNEL_DISPATCH && !take(q, rd, hdr, q->held[0], why, sizeof why)) {
    queue_error(q, EMU_QERR_INVALID_FORMAT, why);
    return false;
  }
  q->held_id = rd;
  q->held_n = n;
  q->held_t0 = type == HSA_PACKET_TYPE_KERNEL_DISPATCH ? emu_now_ns() : 0;
  q->held_retired = emu.cfg.read_index_at_launch;
  if (q->held_retired) retire(q, rd, n);
  return true;
}

/* A packet beyond the highest doorbell value seen. kfd-emu samples the doorbell, so it can miss
 * a higher value that a racing producer overwrote with a lower one within nanoseconds; a real
 * CP sees every write. Such a packet runs once it has stayed valid and unrung for
 * KFD_EMU_DOORBELL_GRACE_MS (1000 ms), with a warning, since the other cause is a real bug that
 * hangs a GPU: a batch rung with its first instead of its last index. In strict mode
 * (KFD_EMU_DOORBELL_GRACE_MS=strict) it never runs; after 1000 ms kfd-emu says so, once. */
static bool unrung_ready(emu_queue_t *q, uint64_t rd) {
  if (((header_of(slot_at(q, rd)) >> HSA_PACKET_HEADER_TYPE) & 0xff) == HSA_PACKET_TYPE_INVALID)
    return false;
  uint64_t now = emu_now_ns();
  if (q->unrung_id != rd || !q->unrung_since) {
    q->unrung_id = rd;
    q->unrung_since = now;
    return false;
  }
  if (now - q->unrung_since < emu.cfg.doorbell_grace_ms * 1000000ull) return false;
  if (emu.cfg.doorbell_strict) {
    if (q->unrung_warned != rd + 1)
      emu_log("GPU %u queue %llu: packet %llu is valid but beyond the doorbell (%lld) for %llu "
              "ms; strict doorbell: it runs only when a doorbell write covers it (a batch rung "
              "with its first index?).", q->gpu->index, qid(q),
              (unsigned long long)rd, (long long)q->rung - 1,
              (unsigned long long)emu.cfg.doorbell_grace_ms);
    q->unrung_warned = rd + 1;
    return false;
  }
  emu_log("GPU %u queue %llu: packet %llu is valid but beyond the doorbell (%lld) for %llu ms; "
          "running it. A real GPU would wait forever if no producer rang a later id (a batch "
          "rung with its first index?).", q->gpu->index, qid(q),
          (unsigned long long)rd, (long long)q->rung - 1,
          (unsigned long long)emu.cfg.doorbell_grace_ms);
  q->unrung_since = 0;
  q->rung = rd + 1;
  return true;
}

/* Runs up to 64 packets of q. Returns true when any packet completed. Holds g->lock. */
static bool run_queue(emu_queue_t *q) {
  if (atomic_load_explicit(&q->suspended, memory_order_acquire)) return false;
  if (q->state == Q_WAIT_SCRATCH) {
    int64_t v = sig_load(q->amdq->queue_inactive_signal);
    if (v == 0) q->state = Q_RUNNING; /* ROCr grew the scratch and resumed the queue */
    else if (v < 0) q->state = Q_FAULTED;
    else return false;
  }
  if (q->state != Q_RUNNING) return false;
  uint32_t done = 0;
  while (done < 64) {
    if (q->held_n) { /* launched, not completed: a barrier waiting, or launch mode */
      uint32_t k = finish(q);
      if (!k) break;
      done += k;
      continue;
    }
    uint64_t rd = *q->read_ptr;
    uint64_t db = atomic_load_explicit(q->doorbell, memory_order_acquire);
    /* Hardware sees every doorbell write and keeps the highest: producers that raced may store
     * their ids out of order (HSA 1.2 system architecture 2.8.3). */
    if (db != DOORBELL_NONE && db + 1 > q->rung) q->rung = db + 1;
    if (rd >= q->rung && !unrung_ready(q, rd)) break;
    uint64_t bad_id;
    uint32_t bad_byte;
    if (q->watch >= 0 && emu_ring_watch_violation(q->watch, &bad_id, &bad_byte)) {
      char why[256];
      snprintf(why, sizeof why, "packet %llu: byte %u was written after its header was "
               "published (publish the header last, with a release store; KFD_EMU_RING_WATCH)",
               (unsigned long long)bad_id, bad_byte);
      queue_error(q, EMU_QERR_INVALID_FORMAT, why);
      break;
    }
    if (!launch(q, rd, q->rung ? q->rung - 1 : rd)) break;
  }
  return done > 0;
}

/* The CP thread of one queue. */
static void *cp_main(void *arg) {
  emu_queue_t *q = arg;
  emu_gpu_t *g = q->gpu;
  cp_gpu = g->index;
  emu_fault_thread_start();
  uint64_t last = emu_now_ns(), sleep_ns = 0;
  while (!atomic_load_explicit(&q->stop, memory_order_acquire)) {
    uint32_t k = atomic_load_explicit(&g->kick, memory_order_seq_cst);
    bool progress = run_queue(q);
    uint64_t now = emu_now_ns();
    if (progress) {
      last = now;
      sleep_ns = 0;
      continue;
    }
    if (now - last < 20000) {
      sched_yield();
      continue;
    }
    /* Long idle (50 ms): sleep up to 20 ms, so an idle queue costs ~50 wake-ups a second. */
    uint64_t cap = now - last > 50000000 ? 20000000 : 1000000;
    sleep_ns = sleep_ns ? (sleep_ns * 2 > cap ? cap : sleep_ns * 2) : 2000;
    struct timespec ts = {(time_t)(sleep_ns / 1000000000), (long)(sleep_ns % 1000000000)};
    atomic_fetch_add_explicit(&g->sleeping, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&g->kick, memory_order_seq_cst) == k &&
        !atomic_load_explicit(&q->stop, memory_order_seq_cst))
      syscall(SYS_futex, &g->kick, FUTEX_WAIT_PRIVATE, k, &ts, NULL, 0);
    /* A kick (host wait, SetEvent, new queue) makes the next scan run now; the back-off
     * stays where it was unless that scan finds work, so a host thread waking up every few
     * ms (ROCr's async-events thread) costs one scan, not a hot spin. */
    atomic_fetch_sub_explicit(&g->sleeping, 1, memory_order_seq_cst);
  }
  emu_fault_thread_stop();
  /* an abandoned queue (queue_free gave up) is this thread's to free: nobody else holds it */
  if (atomic_exchange_explicit(&q->orphan, true, memory_order_seq_cst)) {
    emu_ring_watch_remove(q->watch);
    free(q);
  }
  return NULL;
}

/* Stops q's CP thread, preempting the dispatch it executes (run_dispatch), and frees q; q is
 * off the list. As the KFD's unmap of a queue (queue_preemption_timeout_ms), the preemption
 * has a deadline, KFD_EMU_PREEMPT_TIMEOUT_MS: a workgroup that does not return by then (a
 * twin or POCL kernel looping forever: a host thread cannot be stopped mid-call) leaves the
 * queue abandoned: its thread is detached and frees q itself as it ends (it reads only q and
 * the kernel's own memory, and exits after that workgroup without touching the ring or a
 * signal); said on stderr; returns false then. */
static bool queue_free(emu_queue_t *q) {
  atomic_store_explicit(&q->stop, true, memory_order_seq_cst);
  kick(q->gpu);
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  uint64_t ns = (uint64_t)dl.tv_nsec + emu.cfg.preempt_timeout_ms * 1000000ull;
  dl.tv_sec += (time_t)(ns / 1000000000);
  dl.tv_nsec = (long)(ns % 1000000000);
  pthread_t th = q->thread;
  if (pthread_timedjoin_np(th, NULL, &dl) == ETIMEDOUT) {
    const char *k = atomic_load_explicit(&q->running, memory_order_acquire);
    emu_log("GPU %u queue %llu: preemption timed out after %llu ms (KFD_EMU_PREEMPT_TIMEOUT_MS): "
            "its CP thread is still inside a workgroup of kernel %s, which a host thread cannot "
            "leave; the queue is abandoned (the thread exits once that workgroup returns)",
            q->gpu->index, qid(q), (unsigned long long)emu.cfg.preempt_timeout_ms,
            k ? k : "(none)");
    if (!atomic_exchange_explicit(&q->orphan, true, memory_order_seq_cst)) {
      pthread_detach(th); /* the thread frees q as it ends (q may be gone now: th was copied) */
      return false;
    }
    pthread_join(th, NULL); /* it ended meanwhile, leaving q to this call */
  }
  emu_ring_watch_remove(q->watch);
  free(q);
  return true;
}

void emu_cp_stop(emu_gpu_t *g) {
  pthread_mutex_lock(&g->lock);
  emu_queue_t *list = g->queues;
  g->queues = NULL;
  pthread_mutex_unlock(&g->lock);
  while (list) {
    emu_queue_t *q = list;
    list = q->next;
    queue_free(q);
  }
}

/* ---- queue API ------------------------------------------------------------------------ */

EMU_PUBLIC HSAKMT_STATUS hsaKmtCreateQueue(HSAuint32 node, HSA_QUEUE_TYPE type,
                                           HSAuint32 percent, HSA_QUEUE_PRIORITY prio,
                                           void *ring, HSAuint64 ring_bytes, HsaEvent *event,
                                           HsaQueueResource *res) {
  (void)prio;
  (void)event;
  if (!res || !ring) return HSAKMT_STATUS_INVALID_PARAMETER;
  emu_gpu_t *g = emu_gpu_of_node(node);
  if (!g) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  /* No SDMA engines: ROCr then copies and fills with its blit kernels. */
  if (type != HSA_QUEUE_COMPUTE_AQL) return HSAKMT_STATUS_NOT_SUPPORTED;
  uint64_t pkts = ring_bytes / 64;
  if (ring_bytes % 64 || pkts < 2 || (pkts & (pkts - 1))) {
    emu_log("CreateQueue on node %u: a ring of %llu bytes is not a power of two of at least 2 "
            "AQL packets (64 bytes each)", node, (unsigned long long)ring_bytes);
    return HSAKMT_STATUS_INVALID_PARAMETER;
  }
  if (!res->Queue_read_ptr_aql) return HSAKMT_STATUS_INVALID_PARAMETER;
  emu_queue_t *q = aligned_alloc(_Alignof(emu_queue_t), sizeof *q);
  if (!q) return HSAKMT_STATUS_NO_MEMORY;
  memset(q, 0, sizeof *q);
  q->watch = -1;
  q->gpu = g;
  q->ring = ring;
  q->size = (uint32_t)pkts;
  q->read_ptr = res->Queue_read_ptr_aql;
  /* ROCr passes &amd_queue_t.read_dispatch_id (amd_aql_queue.cpp): recover the amd_queue_t. */
  q->amdq = (amd_queue_t *)((uint8_t *)res->Queue_read_ptr_aql -
                            offsetof(amd_queue_t, read_dispatch_id));
  atomic_init(&q->suspended, percent == 0);
  atomic_init(&q->stop, false);
  q->id = atomic_fetch_add(&next_queue_id, 1);
  pthread_mutex_lock(&g->lock);
  uint32_t slot = 0;
  while (slot < 512 && g->doorbell_used[slot]) slot++;
  if (slot == 512) {
    pthread_mutex_unlock(&g->lock);
    free(q);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  g->doorbell_used[slot] = true;
  q->doorbell_slot = slot;
  q->doorbell = (_Atomic uint64_t *)&g->doorbells[slot];
  atomic_store(q->doorbell, DOORBELL_NONE);
  if (pthread_create(&q->thread, NULL, cp_main, q) != 0) {
    g->doorbell_used[slot] = false;
    pthread_mutex_unlock(&g->lock);
    free(q);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  char name[16];
  snprintf(name, sizeof name, "kfd-emu-q%llu", (unsigned long long)q->id % 100000);
  pthread_setname_np(q->thread, name);
  q->watch = emu.cfg.ring_watch ? emu_ring_watch_add(ring, ring_bytes, q->size, q->amdq) : -1;
  q->next = g->queues;
  g->queues = q;
  pthread_mutex_unlock(&g->lock);
  res->QueueId = q->id;
  res->Queue_DoorBell_aql = (HSAuint64 *)q->doorbell;
  kick(g);
  return HSAKMT_STATUS_SUCCESS;
}

static emu_queue_t **find_queue(HSA_QUEUEID id, emu_gpu_t **out_g) {
  for (uint32_t i = 0; i < emu.cfg.gpus; i++) {
    emu_gpu_t *g = &emu.gpus[i];
    pthread_mutex_lock(&g->lock);
    for (emu_queue_t **pp = &g->queues; *pp; pp = &(*pp)->next)
      if ((*pp)->id == id) {
        *out_g = g;
        return pp; /* returned with g->lock held */
      }
    pthread_mutex_unlock(&g->lock);
  }
  return NULL;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtDestroyQueue(HSA_QUEUEID id) {
  emu_gpu_t *g;
  emu_queue_t **pp = find_queue(id, &g);
  if (!pp) return HSAKMT_STATUS_INVALID_HANDLE;
  emu_queue_t *q = *pp;
  *pp = q->next;
  g->doorbell_used[q->doorbell_slot] = false;
  pthread_mutex_unlock(&g->lock);
  /* An abandoned queue is still gone for the process (off the list, its doorbell free), so
   * this succeeds: ROCr 5.2.3's AqlQueue::Inactivate asserts that DestroyQueue succeeded (the
   * process aborts otherwise); queue_free said on stderr what was left running. */
  queue_free(q);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtUpdateQueue(HSA_QUEUEID id, HSAuint32 percent,
                                           HSA_QUEUE_PRIORITY prio, void *ring,
                                           HSAuint64 ring_bytes, HsaEvent *event) {
  (void)prio;
  (void)ring;
  (void)ring_bytes;
  (void)event;
  emu_gpu_t *g;
  emu_queue_t **pp = find_queue(id, &g);
  if (!pp) return HSAKMT_STATUS_INVALID_HANDLE;
  atomic_store_explicit(&(*pp)->suspended, percent == 0, memory_order_release);
  pthread_mutex_unlock(&g->lock);
  kick(g);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetQueueCUMask(HSA_QUEUEID id, HSAuint32 count, HSAuint32 *mask) {
  (void)count;
  (void)mask;
  emu_gpu_t *g;
  emu_queue_t **pp = find_queue(id, &g);
  if (!pp) return HSAKMT_STATUS_INVALID_HANDLE;
  pthread_mutex_unlock(&g->lock);
  return HSAKMT_STATUS_SUCCESS;
}
