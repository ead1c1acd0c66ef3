/* blit.c - the library's copy and fill kernels for graph copy/fill nodes (hsad_fusion.h).
 *
 * The kernels are OpenCL C compiled with comgr (hsad_codeobj_compile) for the processor of the
 * device that runs them, once per processor per process (the code object bytes are cached;
 * about 0.2 s on the first use), and loaded once per exec and device (the exec owns the
 * program). Each work-item moves 16 bytes, so a node of B bytes dispatches ceil(B / 16)
 * work-items in workgroups of up to 256. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fusion_internal.h"

static const char fu_blit_source[] =
    "/* hsa-dispatch graph copy and fill nodes: 16 bytes per work-item. */\n"
    "kernel void hsad_graph_copy(global uchar *dst, global const uchar *src, ulong bytes) {\n"
    "  ulong i = get_global_id(0) * 16;\n"
    "  if (i + 16 <= bytes) {\n"
    "    vstore16(vload16(0, src + i), 0, dst + i);\n"
    "    return;\n"
    "  }\n"
    "  for (ulong j = i; j < bytes; j++) dst[j] = src[j];\n"
    "}\n"
    "/* byte j of the range is byte (j % width) of the little-endian pattern */\n"
    "kernel void hsad_graph_fill(global uchar *dst, uint pattern, uint width, ulong bytes) {\n"
    "  ulong i = get_global_id(0) * 16;\n"
    "  for (ulong j = i; j < i + 16 && j < bytes; j++)\n"
    "    dst[j] = (uchar)(pattern >> (8 * (uint)(j % width)));\n"
    "}\n";

enum { FU_BLIT_CACHE = 16 };
static struct {
  char processor[64];
  void *elf;
  size_t size;
} fu_blit_cache[FU_BLIT_CACHE];
static pthread_mutex_t fu_blit_lock = PTHREAD_MUTEX_INITIALIZER;

/* The code object for `processor`, compiled on first use (kept for the process). */
static hsad_status_t blit_object(const char *processor, const void **out_elf, size_t *out_size) {
  pthread_mutex_lock(&fu_blit_lock);
  hsad_status_t s = HSAD_OK;
  uint32_t i = 0;
  while (i < FU_BLIT_CACHE && fu_blit_cache[i].elf && strcmp(fu_blit_cache[i].processor, processor))
    i++;
  if (i == FU_BLIT_CACHE) {
    s = hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "graph copy/fill kernels: more than %u processors "
                  "in one process", (unsigned)FU_BLIT_CACHE);
  } else if (!fu_blit_cache[i].elf) {
    hsad_compile_options_t o = {.target = processor, .opt_level = 2, .code_object_version = 5};
    void *elf = NULL;
    size_t n = 0;
    s = hsad_codeobj_compile(fu_blit_source, sizeof fu_blit_source - 1, "hsad_graph_blit.cl", &o,
                             &elf, &n, NULL);
    if (!s) {
      snprintf(fu_blit_cache[i].processor, sizeof fu_blit_cache[i].processor, "%s", processor);
      fu_blit_cache[i].size = n;
      fu_blit_cache[i].elf = elf;
    }
  }
  if (!s) {
    *out_elf = fu_blit_cache[i].elf;
    *out_size = fu_blit_cache[i].size;
  }
  pthread_mutex_unlock(&fu_blit_lock);
  return s;
}

hsad_status_t fu_blit_load(hsad_device_t *device, fu_blit_t *out) {
  const char *processor = hsad_device_info(device)->name;
  if (strlen(processor) >= sizeof fu_blit_cache[0].processor)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "graph copy/fill kernels: processor name '%s' longer "
                     "than %zu bytes", processor, sizeof fu_blit_cache[0].processor - 1);
  const void *elf;
  size_t size;
  hsad_status_t s = blit_object(processor, &elf, &size);
  if (s) {
    char msg[768];
    snprintf(msg, sizeof msg, "%s", hsad_last_error());
    return hsad_fail(s, "graph copy/fill kernels for %s: %s", processor, msg);
  }
  s = hsad_program_load_memory(device, elf, size, "hsad_graph_blit", &out->program);
  if (s) return s;
  if ((s = hsad_program_kernel(out->program, "hsad_graph_copy", &out->copy)) ||
      (s = hsad_program_kernel(out->program, "hsad_graph_fill", &out->fill))) {
    hsad_program_destroy(out->program);
    out->program = NULL;
    return s;
  }
  out->device = device;
  return HSAD_OK;
}
