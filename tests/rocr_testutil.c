/* rocr_testutil.c - see rocr_testutil.h. */
#include "tests/rocr_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static hsa_status_t find_agent(hsa_agent_t a, void *data) {
  rt_t *rt = data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_GPU) {
    if (rt->gpus++ == 0) rt->gpu = a;
  } else if (t == HSA_DEVICE_TYPE_CPU && rt->cpu.handle == 0) {
    rt->cpu = a;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_cpu_pools(hsa_amd_memory_pool_t p, void *data) {
  rt_t *rt = data;
  uint32_t flags = 0;
  hsa_amd_segment_t seg;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  if (seg != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) rt->kernarg_pool = p;
  else if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) rt->fine_pool = p;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t find_gpu_pool(hsa_amd_memory_pool_t p, void *data) {
  rt_t *rt = data;
  hsa_amd_segment_t seg;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  if (seg == HSA_AMD_SEGMENT_GLOBAL && rt->vram_pool.handle == 0) rt->vram_pool = p;
  return HSA_STATUS_SUCCESS;
}

int rt_open(rt_t *rt) {
  memset(rt, 0, sizeof *rt);
  if (hsa_init() != HSA_STATUS_SUCCESS) return -1;
  hsa_iterate_agents(find_agent, rt);
  if (!rt->gpus || !rt->cpu.handle) return -1;
  hsa_amd_agent_iterate_memory_pools(rt->cpu, find_cpu_pools, rt);
  hsa_amd_agent_iterate_memory_pools(rt->gpu, find_gpu_pool, rt);
  return rt->kernarg_pool.handle && rt->fine_pool.handle && rt->vram_pool.handle ? 0 : -1;
}

void rt_close(rt_t *rt) {
  (void)rt;
  hsa_shut_down();
}

void *rt_alloc(hsa_amd_memory_pool_t pool, size_t size, hsa_agent_t *agents, uint32_t n) {
  void *p = NULL;
  if (hsa_amd_memory_pool_allocate(pool, size, 0, &p) != HSA_STATUS_SUCCESS) return NULL;
  if (n && hsa_amd_agents_allow_access(n, agents, NULL, p) != HSA_STATUS_SUCCESS) return NULL;
  return p;
}

static void *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return buf;
}

int rt_kernel_load(rt_t *rt, const char *file, const char *name, rt_kernel_t *out) {
  char path[512], sym[256];
  snprintf(path, sizeof path, "%s/%s", TEST_KERNDIR, file);
  size_t size;
  void *buf = read_file(path, &size);
  if (!buf) return -1;
  memset(out, 0, sizeof *out);
  int rc = -1;
  hsa_executable_symbol_t s;
  snprintf(sym, sizeof sym, "%s.kd", name);
  if (hsa_code_object_reader_create_from_memory(buf, size, &out->reader) ||
      hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                &out->exec) ||
      hsa_executable_load_agent_code_object(out->exec, rt->gpu, out->reader, NULL, NULL) ||
      hsa_executable_freeze(out->exec, NULL) ||
      hsa_executable_get_symbol_by_name(out->exec, sym, &rt->gpu, &s))
    goto done;
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &out->object);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                 &out->kernarg_size);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                 &out->group_size);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                 &out->private_size);
  rc = 0;
done:
  free(buf);
  return rc;
}

void rt_kernel_unload(rt_kernel_t *k) {
  if (k->exec.handle) hsa_executable_destroy(k->exec);
  if (k->reader.handle) hsa_code_object_reader_destroy(k->reader);
}

uint16_t rt_header(hsa_packet_type_t type, bool barrier) {
  return (uint16_t)((type << HSA_PACKET_HEADER_TYPE) |
                    ((barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

uint64_t rt_submit(hsa_queue_t *q, const void *packet64, bool ring) {
  uint64_t id = hsa_queue_add_write_index_scacq_screl(q, 1);
  while (id - hsa_queue_load_read_index_scacquire(q) >= q->size) {
    struct timespec ts = {0, 10000};
    nanosleep(&ts, NULL);
  }
  uint32_t *slot = (uint32_t *)((uint8_t *)q->base_address + (id % q->size) * 64);
  memcpy(slot + 1, (const uint32_t *)packet64 + 1, 60);
  uint32_t first;
  memcpy(&first, packet64, 4);
  __atomic_store_n(slot, first, __ATOMIC_RELEASE);
  if (ring) hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
  return id;
}

bool rt_wait_zero(hsa_signal_t s, uint32_t ms) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, 1000000 /* ~1 ms of ticks */,
                                  HSA_WAIT_STATE_BLOCKED) == 0)
      return true;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >= ms) return false;
  }
}

void rt_dispatch_packet(hsa_kernel_dispatch_packet_t *p, const rt_kernel_t *k, void *kernarg,
                        uint32_t dims, const uint32_t grid[3], const uint32_t wg[3],
                        hsa_signal_t done, bool barrier) {
  memset(p, 0, sizeof *p);
  p->header = rt_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier);
  p->setup = (uint16_t)(dims << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  p->workgroup_size_x = (uint16_t)wg[0];
  p->workgroup_size_y = (uint16_t)wg[1];
  p->workgroup_size_z = (uint16_t)wg[2];
  p->grid_size_x = grid[0];
  p->grid_size_y = grid[1];
  p->grid_size_z = grid[2];
  p->private_segment_size = k ? k->private_size : 0;
  p->group_segment_size = k ? k->group_size : 0;
  p->kernel_object = k ? k->object : 0;
  p->kernarg_address = kernarg;
  p->completion_signal = done;
}
