/* hsad_vendor.h - the vendors one hsa-dispatch library serves, and what is AMD-only.
 *
 * libhsad serves AMD GPUs through ROCr (AQL packets written into HSA queues) and NVIDIA GPUs
 * through the CUDA driver API (streams), chosen per device at run time: hsad_runtime_open
 * enumerates both (AMD first), hsad_device_info_t.vendor says which. Programs, kernels,
 * queues, dispatches, completions, barriers and memory take the same types on both.
 *
 * AMD-only declarations (hsa_agent_t, hsa_queue_t, HSA signals, AQL packet layouts,
 * hsad_rocr.h, hsad_submit.h, hsad_aql.h) need ROCm's headers. They are left out when
 * HSAD_NO_AMD is defined: by the build without the AMD backend (make BACKENDS=nvidia passes
 * -DHSAD_NO_AMD), or automatically when <hsa/hsa.h> cannot be found. */
#ifndef HSAD_VENDOR_H
#define HSAD_VENDOR_H

#if !defined(HSAD_NO_AMD) && defined(__has_include)
#if !__has_include(<hsa/hsa.h>)
#define HSAD_NO_AMD 1
#endif
#endif

/* hsad_device_info_t.vendor. Values are stable. */
typedef enum hsad_vendor {
  HSAD_VENDOR_AMD = 1,    /* ROCr: HSA agents, AQL queues */
  HSAD_VENDOR_NVIDIA = 2, /* CUDA driver API (libcuda.so.1, loaded at run time) */
} hsad_vendor_t;

#endif
