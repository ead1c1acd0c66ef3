/* dispatch_internal.h - private state of hsa-dispatch (not installed, not for other folders). */
#ifndef HSAD_DISPATCH_INTERNAL_H
#define HSAD_DISPATCH_INTERNAL_H

#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_rocr.h"

#define HSAD_SHARED_QUEUES 2
#define HSAD_MAX_DEVICES 16
#define HSAD_MAX_CPUS 16

_Static_assert(offsetof(amd_queue_t, write_dispatch_id) == 56, "amd_queue_t write index");
_Static_assert(offsetof(amd_queue_t, read_dispatch_id) == 128, "amd_queue_t read index");
_Static_assert(offsetof(amd_signal_t, value) == 8, "amd_signal_t value");
_Static_assert(offsetof(amd_signal_t, hardware_doorbell_ptr) == 8, "amd_signal_t doorbell");

enum { DQ_SIG_FREE = 0, DQ_SIG_BUSY = 1, DQ_SIG_ORPHAN = 2 };

struct hsad_completion {
  hsa_signal_t signal;
  amd_signal_t *amd;           /* the signal's memory: value read/written directly */
  _Atomic uint32_t state;      /* DQ_SIG_* */
  _Atomic(hsad_queue_t *) queue; /* queue of the packet carrying it (error wake-up) */
  hsad_device_t *device;
};

struct hsad_device {
  hsad_runtime_t *runtime;
  hsa_agent_t agent;
  hsad_device_info_t info;
  hsa_amd_memory_pool_t kernarg_pool;   /* nearest CPU's kernarg pool */
  hsa_amd_memory_pool_t fine_pool;      /* nearest CPU's fine-grained pool */
  bool has_kernarg_pool, has_fine_pool;
  pthread_mutex_t lock;                 /* shared queues, signal pool creation */
  hsad_queue_t *shared[HSAD_SHARED_QUEUES];
  _Atomic uint32_t shared_rr;
  hsad_completion_t *signals;           /* HSAD_SIGNAL_POOL_SIZE, created on first use */
  _Atomic(hsad_completion_t *) signals_ready;
  _Atomic uint32_t signal_hint;
};

struct hsad_runtime {
  pthread_mutex_t lock;
  uint32_t refs;                        /* under lock */
  uint32_t device_count, cpu_count;
  hsad_device_t devices[HSAD_MAX_DEVICES];
  hsa_agent_t cpu_agents[HSAD_MAX_CPUS];
  hsad_cpu_info_t cpus[HSAD_MAX_CPUS];
  uint64_t timestamp_hz;                /* HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY */
  hsad_queue_t *queues;                 /* live queues (list under lock) */
  hsad_program_t *programs;             /* live programs (list under lock) */
};

struct hsad_queue {
  /* hot, read-mostly */
  hsa_queue_t *hsa;
  amd_queue_t *amd;
  uint8_t *ring;                        /* base_address */
  uint64_t mask;                        /* size - 1 */
  uint32_t size;
  uint32_t kernarg_block;               /* bytes per slot */
  uint8_t *kernargs;                    /* size * kernarg_block bytes */
  volatile uint64_t *doorbell;          /* direct 64-bit doorbell, NULL: use the signal */
  hsa_signal_t doorbell_signal;
  hsad_device_t *device;
  uint32_t dynamic_stack;
  uint32_t spin_ns;
  bool profiling;
  bool shared;
  uint64_t uid;                         /* unique for the process lifetime: kernarg cache key */
  uint32_t max_private;                 /* device max_private_per_work_item */
  uint32_t lds_bytes;                   /* device LDS per workgroup */
  uint64_t queue_ptr;                   /* hidden_queue_ptr */
  uint32_t private_base_hi, shared_base_hi;
  hsad_kernarg_runtime_t karg_rt;       /* hidden values of this queue */
  /* written by producers / the error callback */
  _Alignas(64) _Atomic uint64_t rung;   /* highest packet id stored into the doorbell */
  _Alignas(64) _Atomic int error;       /* 0, or hsad_status_t (QUEUE_ERROR / CLOSED) */
  int hsa_status;                       /* the callback's status */
  char error_msg[256];
  hsad_queue_t *next;                   /* runtime's live list */
};

struct hsad_device_kernel {
  /* read by every dispatch (precomputed at load) */
  uint64_t uid;                         /* unique for the process lifetime: kernarg cache key */
  uint32_t max_flat;                    /* min(.max_flat_workgroup_size, device maximum) */
  uint16_t max_dim[3];                  /* device HSA_AGENT_INFO_WORKGROUP_MAX_DIM */
  uint32_t max_grid[3];                 /* device HSA_AGENT_INFO_GRID_MAX_DIM (0: no limit) */
  bool has_reqd;                        /* .reqd_workgroup_size declared */
  bool dyn_stack;                       /* .uses_dynamic_stack */
  hsad_device_kernel_desc_t desc;
  hsad_program_t *program;
  const hsad_kernarg_plan_t *plan;
};

struct hsad_program {
  hsad_device_t *device;
  hsad_codeobj_t *codeobj;
  hsa_code_object_reader_t reader;
  hsa_executable_t executable;
  uint32_t kernel_count;
  hsad_device_kernel_t *kernels;
  bool dead;                            /* runtime closed under it */
  hsad_program_t *next;
};

extern hsad_runtime_t hsad_rt;
/* Next unique id for queues and kernels (kernarg cache keys never alias a freed object). */
uint64_t dq_next_uid(void);

/* Records an HSA failure: "what: HSA_STATUS_... (string)". */
hsad_status_t dq_hsa_fail(hsa_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* HSAD_ERR_CLOSED unless the runtime is open (takes no lock: refs read atomically). */
hsad_status_t dq_check_open(void);
bool dq_is_open(void);
/* Closes every live queue and program of the runtime (runtime lock held). */
void dq_queues_close_all(void);
void dq_device_release(hsad_device_t *device);
hsad_completion_t *dq_signal_acquire(hsad_device_t *device);

#endif
