/* cmd_info.c - `hsad info [--json]`: agents, ISAs, limits, queues, memory pools, NUMA. */
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"
#include "tools/hsad/hsad_cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: hsad info [--json]\n\n"
             "Lists the GPU agents (ISA names, compute units, wavefront size, LDS per workgroup,\n"
             "workgroup/grid limits, queue sizes, scratch limit, memory pools, nearest CPU agent\n"
             "by ROCr link NUMA distance) and the CPU agents with their NUMA node and pools.\n");
}

static void pools_text(const hsad_pool_info_t *p, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    printf("    pool %u: %-14s %10.1f MiB%s\n", i, p[i].kind, (double)p[i].size / 1048576.0,
           p[i].alloc_allowed ? "" : " (no runtime allocation)");
}

static void pools_json(const hsad_pool_info_t *p, uint32_t n) {
  printf("\"pools\": [");
  for (uint32_t i = 0; i < n; i++)
    printf("%s{\"kind\": \"%s\", \"segment\": %u, \"global_flags\": %u, \"size\": %llu, "
           "\"alloc_granule\": %llu, \"alloc_allowed\": %s}", i ? ", " : "", p[i].kind,
           p[i].segment, p[i].global_flags, (unsigned long long)p[i].size,
           (unsigned long long)p[i].alloc_granule, p[i].alloc_allowed ? "true" : "false");
  printf("]");
}

int hsad_cmd_info(int argc, char **argv) {
  bool json = false;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = true;
    else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "hsad info: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  hsad_runtime_t *rt;
  hsad_status_t s = hsad_runtime_open(&rt);
  if (s) {
    fprintf(stderr, "hsad info: %s: %s\n", hsad_status_name(s), hsad_last_error());
    return 1;
  }
  uint32_t nd = hsad_device_count(rt), nc = hsad_cpu_count(rt);
  if (json) printf("{\"cpus\": [");
  for (uint32_t c = 0; c < nc; c++) {
    const hsad_cpu_info_t *ci = hsad_cpu_info(rt, c);
    if (json) {
      printf("%s{\"index\": %u, \"name\": \"%s\", \"numa_node\": %u, \"cores\": %u, ", c ? ", " : "",
             ci->index, ci->name, ci->numa_node, ci->compute_units);
      pools_json(ci->pools, ci->pool_count);
      printf("}");
    } else {
      printf("CPU agent %u: %s, NUMA node %u, %u cores\n", ci->index, ci->name, ci->numa_node,
             ci->compute_units);
      pools_text(ci->pools, ci->pool_count);
    }
  }
  if (json) printf("], \"gpus\": [");
  for (uint32_t g = 0; g < nd; g++) {
    hsad_device_t *d;
    hsad_device_get(rt, g, &d);
    const hsad_device_info_t *di = hsad_device_info(d);
    int nearest_numa = di->nearest_cpu >= 0 ? (int)hsad_cpu_info(rt, (uint32_t)di->nearest_cpu)->numa_node : -1;
    if (json) {
      printf("%s{\"index\": %u, \"name\": \"%s\", \"product\": \"%s\", \"node\": %u, \"isa\": \"%s\", "
             "\"isas\": [", g ? ", " : "", di->index, di->name, di->product_name, di->node,
             di->isa_name);
      for (uint32_t k = 0; k < di->isa_count; k++) printf("%s\"%s\"", k ? ", " : "", di->isa_names[k]);
      printf("], \"compute_units\": %u, \"simds_per_cu\": %u, \"max_waves_per_cu\": %u, "
             "\"wavefront_size\": %u, \"lds_bytes\": %u, \"max_workgroup_size\": %u, "
             "\"max_workgroup_dim\": [%u, %u, %u], \"max_grid_dim\": [%u, %u, %u], "
             "\"queue_min_size\": %u, \"queue_max_size\": %u, \"queues_max\": %u, "
             "\"max_private_per_work_item\": %u, \"max_wave_scratch\": %llu, "
             "\"local_memory_bytes\": %llu, \"nearest_cpu\": %d, \"nearest_cpu_numa_node\": %d, "
             "\"nearest_cpu_numa_distance\": %u, \"nearest_cpu_hops\": %u, ",
             di->compute_units, di->simds_per_cu, di->max_waves_per_cu, di->wavefront_size,
             di->lds_bytes, di->max_workgroup_size, di->max_workgroup_dim[0],
             di->max_workgroup_dim[1], di->max_workgroup_dim[2], di->max_grid_dim[0],
             di->max_grid_dim[1], di->max_grid_dim[2], di->queue_min_size, di->queue_max_size,
             di->queues_max, di->max_private_per_work_item,
             (unsigned long long)di->max_wave_scratch, (unsigned long long)di->local_memory_bytes,
             di->nearest_cpu, nearest_numa, di->nearest_cpu_numa_distance, di->nearest_cpu_hops);
      pools_json(di->pools, di->pool_count);
      printf("}");
    } else {
      printf("GPU %u: %s (%s), KFD node %u\n", di->index, di->name, di->product_name, di->node);
      for (uint32_t k = 0; k < di->isa_count; k++) printf("  ISA %s\n", di->isa_names[k]);
      printf("  %u CUs x %u SIMDs, wavefront %u, max %u waves/CU\n", di->compute_units,
             di->simds_per_cu, di->wavefront_size, di->max_waves_per_cu);
      printf("  LDS %u bytes per workgroup; workgroup <= %u work-items (%u x %u x %u)\n",
             di->lds_bytes, di->max_workgroup_size, di->max_workgroup_dim[0],
             di->max_workgroup_dim[1], di->max_workgroup_dim[2]);
      printf("  queues: %u..%u packets, at most %u queues\n", di->queue_min_size,
             di->queue_max_size, di->queues_max);
      printf("  scratch: %u bytes per work-item (%llu per wave)\n", di->max_private_per_work_item,
             (unsigned long long)di->max_wave_scratch);
      if (di->nearest_cpu >= 0)
        printf("  nearest CPU agent %d (NUMA node %d): NUMA distance %u, %u link hop(s)\n",
               di->nearest_cpu, nearest_numa, di->nearest_cpu_numa_distance, di->nearest_cpu_hops);
      else
        printf("  nearest CPU agent: none reachable\n");
      pools_text(di->pools, di->pool_count);
    }
  }
  if (json) printf("]}\n");
  hsad_runtime_close(rt);
  return 0;
}
