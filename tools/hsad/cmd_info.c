/* cmd_info.c - `hsad info [--json]`: agents, ISAs, limits, queues, memory pools, NUMA. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"
#include "tools/hsad/hsad_cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: hsad info [--json]\n\n"
             "Lists the GPU agents (ISA names, compute units, wavefront size, LDS per workgroup,\n"
             "workgroup/grid limits, queue sizes, scratch limit, memory pools, nearest CPU agent\n"
             "by ROCr link NUMA distance) and the CPU agents with their NUMA node and pools;\n"
             "NVIDIA GPUs (CUDA driver API) after them: SMs, compute capability, memory, PCI bus\n"
             "and NUMA node, driver and CUDA versions. `--device N` of other commands counts both.\n"
             "--json: one JSON object {\"cpus\": [...], \"gpus\": [...]}, or {\"error\": {...}}.\n"
             "\n"
             "examples:\n"
             "  hsad info\n"
             "  KFD_EMU_GPUS=2 KFD_EMU_CPU_NODES=2 hsad info --json   # two emulated GPUs, NUMA\n");
}

static void pools_text(const hsad_pool_info_t *p, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    printf("    pool %u: %-14s %10.1f MiB%s\n", i, p[i].kind, (double)p[i].size / 1048576.0,
           p[i].alloc_allowed ? "" : " (no runtime allocation)");
}

static json_object *pools_json(const hsad_pool_info_t *p, uint32_t n) {
  json_object *a = json_object_new_array();
  for (uint32_t i = 0; i < n; i++) {
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(p[i].kind));
    json_object_object_add(o, "segment", json_object_new_int64(p[i].segment));
    json_object_object_add(o, "global_flags", json_object_new_int64(p[i].global_flags));
    json_object_object_add(o, "size", json_object_new_uint64(p[i].size));
    json_object_object_add(o, "alloc_granule", json_object_new_uint64(p[i].alloc_granule));
    json_object_object_add(o, "alloc_allowed", json_object_new_boolean(p[i].alloc_allowed));
    json_object_array_add(a, o);
  }
  return a;
}

static json_object *u32_array(const uint32_t *v, int n) {
  json_object *a = json_object_new_array();
  for (int i = 0; i < n; i++) json_object_array_add(a, json_object_new_int64(v[i]));
  return a;
}

#define ADD(o, key, val) json_object_object_add((o), (key), (val))
#define I64(v) json_object_new_int64((int64_t)(v))

static const char *vendor_name(hsad_vendor_t v) {
  return v == HSAD_VENDOR_NVIDIA ? "nvidia" : v == HSAD_VENDOR_AMD ? "amd" : "unknown";
}

/* An NVIDIA device: what the CUDA driver reports (no ISA list, pools or CPU agents). */
static json_object *nvidia_json(const hsad_device_info_t *di) {
  json_object *o = json_object_new_object();
  ADD(o, "index", I64(di->index));
  ADD(o, "vendor", json_object_new_string("nvidia"));
  ADD(o, "cuda_device", I64(di->vendor_index));
  ADD(o, "name", json_object_new_string(di->name));
  ADD(o, "product", json_object_new_string(di->product_name));
  char cc[16];
  snprintf(cc, sizeof cc, "%u.%u", di->cc_major, di->cc_minor);
  ADD(o, "compute_capability", json_object_new_string(cc));
  ADD(o, "sms", I64(di->compute_units));
  ADD(o, "warp_size", I64(di->wavefront_size));
  ADD(o, "max_warps_per_sm", I64(di->max_waves_per_cu));
  ADD(o, "shared_memory_per_block_optin", I64(di->lds_bytes));
  ADD(o, "max_threads_per_block", I64(di->max_workgroup_size));
  uint32_t wd[3] = {di->max_workgroup_dim[0], di->max_workgroup_dim[1], di->max_workgroup_dim[2]};
  ADD(o, "max_block_dim", u32_array(wd, 3));
  ADD(o, "memory_bytes", json_object_new_uint64(di->local_memory_bytes));
  ADD(o, "pci_bus_id", json_object_new_string(di->pci_bus_id));
  ADD(o, "numa_node", I64(di->numa_node));
  ADD(o, "driver_version", json_object_new_string(di->driver_version));
  ADD(o, "cuda_version", I64(di->cuda_version));
  return o;
}

static void nvidia_text(const hsad_device_info_t *di) {
  printf("GPU %u: %s (%s), NVIDIA, CUDA device %u\n", di->index, di->product_name, di->name,
         di->vendor_index);
  printf("  compute capability %u.%u, %u SMs, warp %u, max %u warps/SM\n", di->cc_major,
         di->cc_minor, di->compute_units, di->wavefront_size, di->max_waves_per_cu);
  printf("  shared memory %u bytes per block (opt-in); block <= %u threads (%u x %u x %u)\n",
         di->lds_bytes, di->max_workgroup_size, di->max_workgroup_dim[0],
         di->max_workgroup_dim[1], di->max_workgroup_dim[2]);
  printf("  memory %.1f MiB; PCI %s, NUMA node %d\n", (double)di->local_memory_bytes / 1048576.0,
         di->pci_bus_id[0] ? di->pci_bus_id : "?", di->numa_node);
  printf("  driver %s, CUDA %d.%d (cuDriverGetVersion %d)\n",
         di->driver_version[0] ? di->driver_version : "?", di->cuda_version / 1000,
         di->cuda_version % 1000 / 10, di->cuda_version);
}

static json_object *gpu_json(const hsad_runtime_t *rt, const hsad_device_info_t *di) {
  if (di->vendor == HSAD_VENDOR_NVIDIA) return nvidia_json(di);
  json_object *o = json_object_new_object();
  ADD(o, "index", I64(di->index));
  ADD(o, "vendor", json_object_new_string(vendor_name(di->vendor)));
  ADD(o, "name", json_object_new_string(di->name));
  ADD(o, "product", json_object_new_string(di->product_name));
  ADD(o, "node", I64(di->node));
  ADD(o, "isa", json_object_new_string(di->isa_name));
  json_object *isas = json_object_new_array();
  for (uint32_t k = 0; k < di->isa_count; k++)
    json_object_array_add(isas, json_object_new_string(di->isa_names[k]));
  ADD(o, "isas", isas);
  ADD(o, "compute_units", I64(di->compute_units));
  ADD(o, "simds_per_cu", I64(di->simds_per_cu));
  ADD(o, "max_waves_per_cu", I64(di->max_waves_per_cu));
  ADD(o, "wavefront_size", I64(di->wavefront_size));
  ADD(o, "lds_bytes", I64(di->lds_bytes));
  ADD(o, "max_workgroup_size", I64(di->max_workgroup_size));
  uint32_t wd[3] = {di->max_workgroup_dim[0], di->max_workgroup_dim[1], di->max_workgroup_dim[2]};
  ADD(o, "max_workgroup_dim", u32_array(wd, 3));
  ADD(o, "max_grid_dim", u32_array(di->max_grid_dim, 3));
  ADD(o, "queue_min_size", I64(di->queue_min_size));
  ADD(o, "queue_max_size", I64(di->queue_max_size));
  ADD(o, "queues_max", I64(di->queues_max));
  ADD(o, "max_private_per_work_item", I64(di->max_private_per_work_item));
  ADD(o, "max_wave_scratch", json_object_new_uint64(di->max_wave_scratch));
  ADD(o, "local_memory_bytes", json_object_new_uint64(di->local_memory_bytes));
  ADD(o, "nearest_cpu", I64(di->nearest_cpu));
  ADD(o, "nearest_cpu_numa_node",
      I64(di->nearest_cpu >= 0 ? (int)hsad_cpu_info(rt, (uint32_t)di->nearest_cpu)->numa_node
                               : -1));
  ADD(o, "nearest_cpu_numa_distance", I64(di->nearest_cpu_numa_distance));
  ADD(o, "nearest_cpu_hops", I64(di->nearest_cpu_hops));
  ADD(o, "pools", pools_json(di->pools, di->pool_count));
  return o;
}

static void gpu_text(const hsad_runtime_t *rt, const hsad_device_info_t *di) {
  if (di->vendor == HSAD_VENDOR_NVIDIA) {
    nvidia_text(di);
    return;
  }
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
    printf("  nearest CPU agent %d (NUMA node %u): NUMA distance %u, %u link hop(s)\n",
           di->nearest_cpu, hsad_cpu_info(rt, (uint32_t)di->nearest_cpu)->numa_node,
           di->nearest_cpu_numa_distance, di->nearest_cpu_hops);
  else
    printf("  nearest CPU agent: none reachable\n");
  pools_text(di->pools, di->pool_count);
}

int hsad_cmd_info(int argc, char **argv) {
  hsad_cli_t cli = {.cmd = "info", .json = hsad_cli_wants_json(argc, argv)};
  static const struct option opts[] = {
      {"json", no_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 0;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c != 'j') return hsad_cli_getopt_fail(&cli, c, argv);
  }
  if (optind < argc)
    return hsad_cli_fail(&cli, 2, "usage", "unexpected argument '%s' (see hsad info --help)",
                         argv[optind]);
  hsad_runtime_t *rt;
  hsad_status_t s = hsad_runtime_open(&rt);
  if (s) return hsad_cli_fail_status(&cli, s);
  uint32_t nd = hsad_device_count(rt), nc = hsad_cpu_count(rt);
  json_object *cpus = cli.json ? json_object_new_array() : NULL;
  json_object *gpus = cli.json ? json_object_new_array() : NULL;
  for (uint32_t i = 0; i < nc; i++) {
    const hsad_cpu_info_t *ci = hsad_cpu_info(rt, i);
    if (cli.json) {
      json_object *o = json_object_new_object();
      ADD(o, "index", I64(ci->index));
      ADD(o, "name", json_object_new_string(ci->name));
      ADD(o, "numa_node", I64(ci->numa_node));
      ADD(o, "cores", I64(ci->compute_units));
      ADD(o, "pools", pools_json(ci->pools, ci->pool_count));
      json_object_array_add(cpus, o);
    } else {
      printf("CPU agent %u: %s, NUMA node %u, %u cores\n", ci->index, ci->name, ci->numa_node,
             ci->compute_units);
      pools_text(ci->pools, ci->pool_count);
    }
  }
  for (uint32_t g = 0; g < nd; g++) {
    hsad_device_t *d;
    if ((s = hsad_device_get(rt, g, &d))) {
      json_object_put(cpus);
      json_object_put(gpus);
      hsad_cli_fail_status(&cli, s);
      hsad_runtime_close(rt);
      return 1;
    }
    if (cli.json) json_object_array_add(gpus, gpu_json(rt, hsad_device_info(d)));
    else gpu_text(rt, hsad_device_info(d));
  }
  if (cli.json) {
    json_object *o = json_object_new_object();
    ADD(o, "cpus", cpus);
    ADD(o, "gpus", gpus);
    hsad_cli_print_json(o);
  }
  hsad_runtime_close(rt);
  return 0;
}
