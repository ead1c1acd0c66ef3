/* rocr_testutil.h - plain ROCr helpers for tests that exercise kfd-emu through the real ROCr
 * (no hsa-dispatch code): find agents and pools, load a code object, write AQL packets the
 * textbook way, wait with a deadline. Not part of any library. */
#ifndef ROCR_TESTUTIL_H
#define ROCR_TESTUTIL_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stdint.h>

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

typedef struct rt {
  hsa_agent_t gpu, cpu;
  hsa_amd_memory_pool_t kernarg_pool; /* CPU pool with KERNARG_INIT */
  hsa_amd_memory_pool_t fine_pool;    /* CPU fine-grained pool */
  hsa_amd_memory_pool_t vram_pool;    /* GPU coarse-grained pool */
  uint32_t gpus;
} rt_t;

typedef struct rt_kernel {
  hsa_executable_t exec;
  hsa_code_object_reader_t reader;
  uint64_t object;
  uint32_t kernarg_size, group_size, private_size;
} rt_kernel_t;

/* hsa_init and agent/pool discovery; 0 on success. */
int rt_open(rt_t *rt);
void rt_close(rt_t *rt);
/* Loads TEST_KERNDIR/<file> onto rt->gpu and resolves kernel `name` (without .kd). */
int rt_kernel_load(rt_t *rt, const char *file, const char *name, rt_kernel_t *out);
void rt_kernel_unload(rt_kernel_t *k);
void *rt_alloc(hsa_amd_memory_pool_t pool, size_t size, hsa_agent_t *agents, uint32_t n);

/* Reserves a slot, copies the 64-byte packet with its header left INVALID, publishes the
 * header with one 32-bit release store (header | setup << 16) and rings the doorbell.
 * ring=false leaves the doorbell alone. Returns the packet id. */
uint64_t rt_submit(hsa_queue_t *q, const void *packet64, bool ring);
/* Waits until the signal's value is 0; returns false after ms milliseconds. */
bool rt_wait_zero(hsa_signal_t s, uint32_t ms);

/* Fills a kernel dispatch packet (header and setup included in the struct). */
void rt_dispatch_packet(hsa_kernel_dispatch_packet_t *p, const rt_kernel_t *k, void *kernarg,
                        uint32_t dims, const uint32_t grid[3], const uint32_t wg[3],
                        hsa_signal_t done, bool barrier);
uint16_t rt_header(hsa_packet_type_t type, bool barrier);

#endif
