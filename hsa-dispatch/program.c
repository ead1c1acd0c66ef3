/* program.c - code objects loaded onto a device: ISA check, hsa_executable, kernel resolution. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/dispatch_internal.h"

/* Checks the code object's target ID against every ISA of the agent (ROCR-Runtime #198). */
static hsad_status_t check_isa(hsad_device_t *d, const hsad_codeobj_t *co) {
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  for (uint32_t k = 0; k < d->info.isa_count; k++) {
    hsad_target_id_t agent_id;
    if (hsad_target_id_parse(d->info.isa_names[k], &agent_id) != HSAD_OK) continue;
    if (hsad_target_id_compatible(&ci->target_id, &agent_id)) return HSAD_OK;
  }
  char want[64];
  hsad_target_id_format(&ci->target_id, want, sizeof want);
  char have[HSAD_MAX_ISAS * HSAD_ISA_NAME_MAX + 8] = "";
  for (uint32_t k = 0; k < d->info.isa_count; k++) {
    if (k) strcat(have, ", ");
    strcat(have, d->info.isa_names[k]);
  }
  return hsad_fail(HSAD_ERR_ISA_MISMATCH,
                   "%s: code object targets %s, device %u (%s) supports %s: compile for %s",
                   ci->name, want, d->info.index, d->info.name, have[0] ? have : "no ISA",
                   d->info.isa_name);
}

static void program_unlink(hsad_program_t *p) {
  pthread_mutex_lock(&hsad_rt.lock);
  for (hsad_program_t **pp = &hsad_rt.programs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  pthread_mutex_unlock(&hsad_rt.lock);
}

static hsad_status_t program_create(hsad_device_t *d, hsad_codeobj_t *co,
                                    hsad_program_t **out_program) {
  hsad_status_t s = check_isa(d, co);
  if (s) {
    hsad_codeobj_destroy(co);
    return s;
  }
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  hsad_program_t *p = calloc(1, sizeof *p);
  if (p) p->kernels = calloc(ci->kernel_count ? ci->kernel_count : 1, sizeof *p->kernels);
  if (!p || !p->kernels) {
    if (p) free(p);
    hsad_codeobj_destroy(co);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", ci->name);
  }
  p->device = d;
  p->codeobj = co;
  hsa_status_t st = hsad_rocr.hsa_code_object_reader_create_from_memory(ci->image, ci->image_size, &p->reader);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_code_object_reader_create_from_memory", ci->name);
    goto fail_co;
  }
  st = hsad_rocr.hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL,
                                 &p->executable);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_executable_create_alt", ci->name);
    goto fail_reader;
  }
  st = hsad_rocr.hsa_executable_load_agent_code_object(p->executable, d->agent, p->reader, NULL, NULL);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_executable_load_agent_code_object on device %u (%s)", ci->name,
                    d->info.index, d->info.isa_name);
    goto fail_exec;
  }
  st = hsad_rocr.hsa_executable_freeze(p->executable, NULL);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_executable_freeze", ci->name);
    goto fail_exec;
  }
  for (uint32_t k = 0; k < ci->kernel_count; k++) {
    const hsad_kernel_t *ck = hsad_codeobj_kernel_at(co, k);
    const hsad_kernel_info_t *ki = hsad_kernel_info(ck);
    hsa_executable_symbol_t sym;
    st = hsad_rocr.hsa_executable_get_symbol_by_name(p->executable, ki->symbol, &d->agent, &sym);
    if (st != HSA_STATUS_SUCCESS) {
      s = dq_hsa_fail(st, "%s: kernel symbol %s not found in the frozen executable", ci->name,
                      ki->symbol);
      goto fail_exec;
    }
    hsad_device_kernel_t *dk = &p->kernels[k];
    dk->program = p;
    dk->plan = hsad_kernel_kernarg_plan(ck);
    hsad_device_kernel_desc_t *dd = &dk->desc;
    hsad_rocr.hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &dd->kernel_object);
    dd->name = ki->name;
    dd->kernarg_segment_size = ki->kernarg_segment_size;
    dd->kernarg_segment_align = ki->kernarg_segment_align < 16 ? 16 : ki->kernarg_segment_align;
    dd->group_segment_fixed_size = ki->group_segment_fixed_size;
    dd->private_segment_fixed_size = ki->private_segment_fixed_size;
    dd->max_flat_workgroup_size = ki->max_flat_workgroup_size ? ki->max_flat_workgroup_size : 1024;
    if (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE)
      memcpy(dd->reqd_workgroup_size, ki->reqd_workgroup_size, sizeof dd->reqd_workgroup_size);
    dd->uses_dynamic_stack = ki->uses_dynamic_stack || ki->kd.uses_dynamic_stack;
    dd->codeobj_kernel = ck;
    dk->uid = dq_next_uid();
    dk->max_flat = dd->max_flat_workgroup_size;
    if (d->info.max_workgroup_size && d->info.max_workgroup_size < dk->max_flat)
      dk->max_flat = d->info.max_workgroup_size;
    memcpy(dk->max_dim, d->info.max_workgroup_dim, sizeof dk->max_dim);
    for (int i = 0; i < 3; i++)
      dk->max_grid[i] = d->info.max_grid_dim[i] ? d->info.max_grid_dim[i] : UINT32_MAX;
    dk->has_reqd = dd->reqd_workgroup_size[0] != 0;
    dk->dyn_stack = dd->uses_dynamic_stack;
  }
  p->kernel_count = ci->kernel_count;
  pthread_mutex_lock(&hsad_rt.lock);
  p->next = hsad_rt.programs;
  hsad_rt.programs = p;
  pthread_mutex_unlock(&hsad_rt.lock);
  *out_program = p;
  return HSAD_OK;
fail_exec:
  hsad_rocr.hsa_executable_destroy(p->executable);
fail_reader:
  hsad_rocr.hsa_code_object_reader_destroy(p->reader);
fail_co:
  hsad_codeobj_destroy(co);
  free(p->kernels);
  free(p);
  return s;
}

/* Selects the container entry for the device; a container without a compatible entry is an
 * ISA mismatch naming both sides. */
static hsad_status_t load_container(hsad_device_t *d, hsad_codeobj_container_t *c,
                                    const char *label, hsad_program_t **out_program) {
  size_t idx = 0;
  hsad_status_t s = hsad_codeobj_container_select(c, d->info.isa_names[0], &idx);
  if (s == HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND) {
    size_t n = hsad_codeobj_container_entry_count(c);
    char have[512] = "";
    for (size_t k = 0; k < n && strlen(have) < 400; k++) {
      if (k) strcat(have, ", ");
      strncat(have, hsad_codeobj_container_entry(c, k)->target, 100);
    }
    hsad_codeobj_container_destroy(c);
    return hsad_fail(HSAD_ERR_ISA_MISMATCH,
                     "%s: code object targets %s, device %u (%s) supports %s: compile for %s",
                     label, have[0] ? have : "nothing", d->info.index, d->info.name,
                     d->info.isa_names[0], d->info.isa_name);
  }
  if (s) {
    hsad_codeobj_container_destroy(c);
    return s;
  }
  hsad_codeobj_t *co = NULL;
  s = hsad_codeobj_load_entry(c, idx, &co);
  hsad_codeobj_container_destroy(c);
  if (s) return s;
  return program_create(d, co, out_program);
}

hsad_status_t hsad_program_load_file(hsad_device_t *device, const char *path,
                                     hsad_program_t **out_program) {
  if (!device || !path || !out_program)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_load_file: NULL argument");
  hsad_status_t s = dq_check_open();
  if (s) return s;
  hsad_codeobj_container_t *c = NULL;
  s = hsad_codeobj_container_open_file(path, &c);
  if (s) return s;
  return load_container(device, c, path, out_program);
}

hsad_status_t hsad_program_load_memory(hsad_device_t *device, const void *data, size_t size,
                                       const char *label, hsad_program_t **out_program) {
  if (!device || !data || !size || !out_program)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_load_memory: NULL argument or size 0");
  hsad_status_t s = dq_check_open();
  if (s) return s;
  hsad_codeobj_container_t *c = NULL;
  s = hsad_codeobj_container_open_memory(data, size, label, &c);
  if (s) return s;
  return load_container(device, c, label ? label : "<memory>", out_program);
}

void hsad_program_destroy(hsad_program_t *p) {
  if (!p) return;
  program_unlink(p);
  if (!p->dead && dq_is_open()) {
    hsad_rocr.hsa_executable_destroy(p->executable);
    hsad_rocr.hsa_code_object_reader_destroy(p->reader);
  }
  hsad_codeobj_destroy(p->codeobj);
  free(p->kernels);
  free(p);
}

const hsad_codeobj_t *hsad_program_codeobj(const hsad_program_t *p) { return p ? p->codeobj : NULL; }
hsad_device_t *hsad_program_device(const hsad_program_t *p) { return p ? p->device : NULL; }
uint32_t hsad_program_kernel_count(const hsad_program_t *p) { return p ? p->kernel_count : 0; }

hsad_status_t hsad_program_kernel(const hsad_program_t *p, const char *name,
                                  const hsad_device_kernel_t **out_kernel) {
  if (!p || !name || !out_kernel)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_kernel: NULL argument");
  if (p->dead || !dq_is_open())
    return hsad_fail(HSAD_ERR_CLOSED, "hsad_program_kernel(%s): the runtime was closed", name);
  const hsad_kernel_t *ck = NULL;
  hsad_status_t s = hsad_codeobj_kernel_find(p->codeobj, name, &ck);
  if (s) return s;
  for (uint32_t k = 0; k < p->kernel_count; k++)
    if (p->kernels[k].desc.codeobj_kernel == ck) {
      *out_kernel = &p->kernels[k];
      return HSAD_OK;
    }
  return hsad_fail(HSAD_ERR_KERNEL_NOT_FOUND, "%s: kernel %s not loaded",
                   hsad_codeobj_info(p->codeobj)->name, name);
}

const hsad_device_kernel_t *hsad_program_kernel_at(const hsad_program_t *p, uint32_t i) {
  return p && i < p->kernel_count ? &p->kernels[i] : NULL;
}

const hsad_device_kernel_desc_t *hsad_device_kernel_desc(const hsad_device_kernel_t *k) {
  return k ? &k->desc : NULL;
}
