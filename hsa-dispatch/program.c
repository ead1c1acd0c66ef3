/* program.c - code objects loaded onto a device: ISA check, hsa_executable, kernel resolution.
 * A HIP fat binary built from several translation units holds one bundle per unit, each with
 * its own kernels: the program loads the device's entry of every bundle into one executable
 * (HSA allows several code objects per executable) and looks kernels up across all of them. */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/dispatch_internal.h"

/* A program with its code objects ("units"). hsad_program_t comes first, so a program pointer
 * is also a pointer to this; units[0] / readers[0] are p.codeobj / p.reader (what the rest of
 * hsa-dispatch sees), the others live here. kernel_base[u]: index in p.kernels of the first
 * kernel of unit u. */
typedef struct program_units {
  hsad_program_t p;
  uint32_t unit_count;
  hsad_codeobj_t **units;
  hsa_code_object_reader_t *readers;
  uint32_t *kernel_base;
} program_units_t;

/* The bytes of a kernel's kernarg segment the dispatch hot path copies: up to the end of its
 * last declared argument (explicit or hidden, hidden_none included), rounded up to 16, at most
 * the segment rounded up to 16 (the image is zero past the segment). A kernel reads only the arguments its metadata declares (AMDGPUUsage, "Code
 * Object Metadata": .args lists every explicit and hidden argument with its .offset and
 * .size), so the bytes past them, most of code object v5's 256-byte hidden block, are not
 * written per submit (hsad_queue.h, "The argument path"). */
static uint32_t kernarg_copy_of(const hsad_kernarg_plan_t *plan, uint32_t segment) {
  if (!plan) return segment;
  uint32_t end = 0;
  for (uint32_t i = 0; i < plan->explicit_count; i++)
    if (plan->explicit_args[i].offset + plan->explicit_args[i].size > end)
      end = plan->explicit_args[i].offset + plan->explicit_args[i].size;
  for (uint32_t i = 0; i < plan->hidden_count; i++)
    if (plan->hidden_args[i].offset + plan->hidden_args[i].size > end)
      end = plan->hidden_args[i].offset + plan->hidden_args[i].size;
  uint32_t all = (segment + 15) & ~15u; /* within the kernarg block (a multiple of 64) */
  end = (end + 15) & ~15u;
  return end < all ? end : all;
}

static program_units_t *units_of(const hsad_program_t *p) { return (program_units_t *)p; }

static void units_free(program_units_t *u, bool release_readers) {
  for (uint32_t i = 0; i < u->unit_count; i++) {
    if (release_readers && u->readers && u->readers[i].handle)
      hsad_rocr.hsa_code_object_reader_destroy(u->readers[i]);
    hsad_codeobj_destroy(u->units[i]);
  }
  free(u->units);
  free(u->readers);
  free(u->kernel_base);
  free(u->p.kernels);
  free(u);
}

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

static const char *elf_binding_name(unsigned b) {
  switch (b) {
  case STB_LOCAL: return "STB_LOCAL";
  case STB_GLOBAL: return "STB_GLOBAL";
  case STB_WEAK: return "STB_WEAK";
  default: return b == 10 ? "STB_GNU_UNIQUE" : "unknown";
  }
}

static const char *elf_type_name(unsigned t) {
  static const char *const names[] = {"STT_NOTYPE", "STT_OBJECT", "STT_FUNC", "STT_SECTION",
                                      "STT_FILE",   "STT_COMMON", "STT_TLS"};
  if (t < sizeof names / sizeof names[0]) return names[t];
  return t == 10 ? "STT_AMDGPU_HSA_KERNEL" : "unknown";
}

/* ROCr's kernel object for `sym` (the NAME.kd symbol ROCr's loader exposes for kernel `kern`)
 * must hold the bytes hsad decoded as its descriptor, at the same place in the file. How ROCr
 * 5.2.3's loader (loader/executable.cpp) places it, for code object v2+: LoadSegmentsV2
 * allocates one block for all PT_LOAD segments, starting at the first one's p_vaddr and sized
 * the last one's p_vaddr + p_memsz, and copies each PT_LOAD's p_filesz bytes from p_offset to
 * its p_vaddr (LoadSegmentV2, Segment::Copy); LoadDefinitionSymbol takes the kernel object
 * from SymbolAddress: SectionSegment finds the segment whose range holds the symbol's
 * section's sh_addr (Segment::IsAddressInSegment; none: address 0), and Segment::Address turns
 * the symbol's VAddr, st_value for KernelSymbolV2 and VariableSymbolV2 (amd_hsa_code.hpp),
 * into block + st_value - first p_vaddr. SHF_ALLOC is never looked at. hsad_codeobj_load_memory
 * copied the descriptor from file offset sh_offset + st_value - sh_addr of its own symbol's
 * section (hsad_kernel_descriptor_offset). So refused: a symbol whose st_shndx is no section of
 * the file (ROCr has no section to place it by; codeobj's load already refuses such a symbol in
 * a .symtab, so this only guards the contract), a section address outside ROCr's block (the
 * kernel object would be 0), a value whose 64 bytes no PT_LOAD's file-backed range [p_vaddr,
 * p_vaddr + p_filesz) holds (zeros or other memory), and a segment file offset p_offset +
 * st_value - p_vaddr other than hsad's (other file bytes: vadd.kd moved to .strtab, address 0,
 * loaded with the ELF header as its kernel object). A section without SHF_ALLOC whose bytes lie
 * where a PT_LOAD puts them loads (.rodata with sh_flags 0 inside the first PT_LOAD). Checked on
 * kfd-emu without this check: test_codeobj_fuzz's 20 x 1,000 objects whose kernel object held
 * other bytes than hsad's descriptor (19) are the ones refused here, plus one ROCr refused. */
static hsad_status_t check_kernel_object(const hsad_codeobj_info_t *ci, const hsad_kernel_t *kern,
                                         const hsad_symtab_symbol_t *sym) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(kern);
  uint64_t hsad_at = hsad_kernel_descriptor_offset(kern);
  unsigned long long j = sym->index, a = sym->value;
  if (!sym->section_in_file)
    return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                     "%s: kernel '%s': its descriptor symbol %s (symbol %llu of .symtab, section "
                     "%u) has section index %u, which is no section of the file: ROCr's loader "
                     "places a kernel object by its symbol's section, so it would not hold this "
                     "descriptor",
                     ci->name, ki->name, ki->symbol, j, sym->symtab_section, sym->section);
  uint64_t first = sym->load_first, size = sym->load_last_end;
  if (sym->section_address < first || sym->section_address - first >= size)
    return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                     "%s: kernel '%s': its descriptor symbol %s (symbol %llu of .symtab, section "
                     "%u) lies in section %u (%s), whose address 0x%llx is outside the block "
                     "ROCr's loader allocates for the PT_LOAD segments (0x%llx, %llu bytes): its "
                     "kernel object would be address 0",
                     ci->name, ki->name, ki->symbol, j, sym->symtab_section, sym->section,
                     sym->section_name, (unsigned long long)sym->section_address,
                     (unsigned long long)first, (unsigned long long)size);
  if (!sym->in_segment)
    return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                     "%s: kernel '%s': its descriptor symbol %s (symbol %llu of .symtab, section "
                     "%u) lies in section %u (%s) at address 0x%llx, and no PT_LOAD segment "
                     "loads those 64 bytes from the file (p_vaddr to p_vaddr + p_filesz): ROCr's "
                     "kernel object would not hold the descriptor hsad read from file offset "
                     "0x%llx",
                     ci->name, ki->name, ki->symbol, j, sym->symtab_section, sym->section,
                     sym->section_name, a, (unsigned long long)hsad_at);
  if (sym->segment_offset != hsad_at)
    return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                     "%s: kernel '%s': its descriptor symbol %s (symbol %llu of .symtab, section "
                     "%u) lies in section %u (%s) at address 0x%llx, which segment %u (PT_LOAD) "
                     "loads from file offset 0x%llx, while hsad read the descriptor from file "
                     "offset 0x%llx: ROCr's kernel object would hold other bytes than this "
                     "descriptor",
                     ci->name, ki->name, ki->symbol, j, sym->symtab_section, sym->section,
                     sym->section_name, a, sym->segment, (unsigned long long)sym->segment_offset,
                     (unsigned long long)hsad_at);
  return HSAD_OK;
}

/* Every kernel's NAME.kd must be a symbol ROCr's loader exposes, checked before loading so the
 * failure names the kernel and the cause instead of "not found in the frozen executable".
 * ROCr's loader (ROCr 5.2.3: GElfImage::pullElf in amd_elf_image.cpp, AmdHsaCode::PullElfV2
 * in amd_hsa_code.cpp, ExecutableImpl::LoadCodeObject in loader/executable.cpp) reads symbols
 * from the section *named* .symtab only (the last one of that name; never .dynsym or another
 * SHT_SYMTAB), keeps STT_OBJECT, STT_COMMON and type 10 (STT_AMDGPU_HSA_KERNEL) ones, and for
 * code object v3+ skips STB_LOCAL ones not of type 10; hsa_executable_get_symbol_by_name
 * finds only what it loaded. hsad_codeobj_load_memory reads descriptors from any symbol table
 * (.dynsym too: hsad inspect reads stripped objects), so the rule lives here: a symbol of
 * .symtab named NAME.kd that is STT_OBJECT and not STB_LOCAL, or of type 10 (any binding; ROCr
 * resolves it through its NAME.kd name, and fails the load itself when fewer than 256 bytes
 * follow it). STT_COMMON is a declaration ROCr's load fails on. The symbols are read by
 * codeobj's libelf layer (hsad_codeobj_symtab_find). That symbol (the first such) must then
 * place the kernel object on the bytes hsad decoded (check_kernel_object).
 * HSAD_ERR_MISSING_DESCRIPTOR naming the file, the kernel, the symbol and the reason. */
static hsad_status_t check_rocr_symbols(const hsad_codeobj_t *co) {
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  if (!ci->image || !ci->kernel_count) return HSAD_OK;
  for (uint32_t k = 0; k < ci->kernel_count; k++) {
    const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
    const hsad_kernel_info_t *ki = hsad_kernel_info(kern);
    hsad_symtab_symbol_t sym, first = {.found = false};
    for (uint64_t from = 0;; from = sym.index + 1) {
      hsad_status_t s = hsad_codeobj_symtab_find(co, ki->symbol, from, &sym);
      if (s) return s;
      if (!sym.found) break;
      if ((sym.type == STT_OBJECT && sym.binding != STB_LOCAL) || sym.type == 10) break;
      if (!first.found) first = sym;
    }
    if (sym.found) {
      hsad_status_t s = check_kernel_object(ci, kern, &sym);
      if (s) return s;
      continue;
    }
    if (!sym.symtab_section)
      return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                       "%s: kernel '%s': no section is named .symtab, the only symbol table "
                       "ROCr's loader reads (not .dynsym): it would not expose %s",
                       ci->name, ki->name, ki->symbol);
    if (!first.found)
      return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                       "%s: kernel '%s': its descriptor symbol %s is not in .symtab (section "
                       "%u, %llu symbols), the only symbol table ROCr's loader reads (not "
                       ".dynsym)",
                       ci->name, ki->name, ki->symbol, sym.symtab_section,
                       (unsigned long long)sym.symtab_count);
    unsigned b = first.binding, t = first.type;
    return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                     "%s: kernel '%s': its descriptor symbol %s (symbol %llu of .symtab, section "
                     "%u) has binding %u (%s) and type %u (%s): ROCr's loader exposes a kernel "
                     "descriptor only through a non-local STT_OBJECT or a type 10 symbol",
                     ci->name, ki->name, ki->symbol, (unsigned long long)first.index,
                     first.symtab_section, b, elf_binding_name(b), t, elf_type_name(t));
  }
  return HSAD_OK;
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

/* Loads `n` code objects (owned: freed on failure too) into one executable on `d`. */
static hsad_status_t program_create(hsad_device_t *d, hsad_codeobj_t **cos, uint32_t n,
                                    hsad_program_t **out_program) {
  hsad_status_t s = HSAD_OK;
  uint32_t total = 0;
  for (uint32_t u = 0; u < n && !s; u++) {
    s = check_isa(d, cos[u]);
    if (!s) s = check_rocr_symbols(cos[u]);
    total += hsad_codeobj_info(cos[u])->kernel_count;
  }
  /* the same kernel name in two units: ROCr would refuse the duplicate symbol; name both */
  for (uint32_t u = 1; u < n && !s; u++) {
    const hsad_codeobj_info_t *ci = hsad_codeobj_info(cos[u]);
    for (uint32_t k = 0; k < ci->kernel_count && !s; k++) {
      const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(cos[u], k));
      for (uint32_t v = 0; v < u; v++) {
        const hsad_kernel_t *other;
        if (hsad_codeobj_kernel_find(cos[v], ki->symbol, &other) != HSAD_OK) continue;
        s = hsad_fail(HSAD_ERR_METADATA_TYPE,
                      "kernel '%s' is defined in two translation units: %s and %s", ki->name,
                      hsad_codeobj_info(cos[v])->name, ci->name);
        break;
      }
    }
  }
  if (!s) hsad_clear_error();
  program_units_t *pu = s ? NULL : calloc(1, sizeof *pu);
  if (pu) {
    pu->units = calloc(n, sizeof *pu->units);
    pu->readers = calloc(n, sizeof *pu->readers);
    pu->kernel_base = calloc(n, sizeof *pu->kernel_base);
    pu->p.kernels = calloc(total ? total : 1, sizeof *pu->p.kernels);
  }
  if (!s && (!pu || !pu->units || !pu->readers || !pu->kernel_base || !pu->p.kernels)) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of host memory",
                  hsad_codeobj_info(cos[0])->name);
  }
  if (s) {
    for (uint32_t u = 0; u < n; u++) hsad_codeobj_destroy(cos[u]);
    if (pu) {
      pu->unit_count = 0;
      units_free(pu, false);
    }
    return s;
  }
  memcpy(pu->units, cos, n * sizeof *cos);
  pu->unit_count = n;
  hsad_program_t *p = &pu->p;
  p->device = d;
  p->codeobj = cos[0];
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(cos[0]);
  hsa_status_t st = hsad_rocr.hsa_executable_create_alt(
      HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT, NULL, &p->executable);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_executable_create_alt", ci->name);
    goto fail;
  }
  for (uint32_t u = 0; u < n; u++) {
    const hsad_codeobj_info_t *cu = hsad_codeobj_info(cos[u]);
    st = hsad_rocr.hsa_code_object_reader_create_from_memory(cu->image, cu->image_size,
                                                             &pu->readers[u]);
    if (st != HSA_STATUS_SUCCESS) {
      s = dq_hsa_fail(st, "%s: hsa_code_object_reader_create_from_memory", cu->name);
      goto fail_exec;
    }
    st = hsad_rocr.hsa_executable_load_agent_code_object(p->executable, d->agent,
                                                         pu->readers[u], NULL, NULL);
    if (st != HSA_STATUS_SUCCESS) {
      s = dq_hsa_fail(st, "%s: hsa_executable_load_agent_code_object on device %u (%s)",
                      cu->name, d->info.index, d->info.isa_name);
      goto fail_exec;
    }
  }
  p->reader = pu->readers[0];
  st = hsad_rocr.hsa_executable_freeze(p->executable, NULL);
  if (st != HSA_STATUS_SUCCESS) {
    s = dq_hsa_fail(st, "%s: hsa_executable_freeze", ci->name);
    goto fail_exec;
  }
  uint32_t at = 0;
  for (uint32_t u = 0; u < n; u++) {
    const hsad_codeobj_info_t *cu = hsad_codeobj_info(cos[u]);
    pu->kernel_base[u] = at;
    for (uint32_t k = 0; k < cu->kernel_count; k++, at++) {
      const hsad_kernel_t *ck = hsad_codeobj_kernel_at(cos[u], k);
      const hsad_kernel_info_t *ki = hsad_kernel_info(ck);
      hsa_executable_symbol_t sym;
      st = hsad_rocr.hsa_executable_get_symbol_by_name(p->executable, ki->symbol, &d->agent,
                                                       &sym);
      if (st != HSA_STATUS_SUCCESS) {
        s = dq_hsa_fail(st, "%s: kernel symbol %s not found in the frozen executable",
                        cu->name, ki->symbol);
        goto fail_exec;
      }
      hsad_device_kernel_t *dk = &p->kernels[at];
      dk->program = p;
      dk->plan = hsad_kernel_kernarg_plan(ck);
      dk->kernarg_copy = kernarg_copy_of(dk->plan, ki->kernarg_segment_size);
      hsad_device_kernel_desc_t *dd = &dk->desc;
      hsad_rocr.hsa_executable_symbol_get_info(sym, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                                               &dd->kernel_object);
      dd->name = ki->name;
      dd->kernarg_segment_size = ki->kernarg_segment_size;
      dd->kernarg_segment_align = ki->kernarg_segment_align < 16 ? 16 : ki->kernarg_segment_align;
      dd->group_segment_fixed_size = ki->group_segment_fixed_size;
      dd->private_segment_fixed_size = ki->private_segment_fixed_size;
      dd->max_flat_workgroup_size = ki->max_flat_workgroup_size ? ki->max_flat_workgroup_size
                                                                : 1024;
      if (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE)
        memcpy(dd->reqd_workgroup_size, ki->reqd_workgroup_size,
               sizeof dd->reqd_workgroup_size);
      dd->uses_dynamic_stack = ki->uses_dynamic_stack || ki->kd.uses_dynamic_stack;
      dd->codeobj_kernel = ck;
      dk->uid = dq_next_uid();
      dk->hot_id = dk->uid < DQ_HOT_KERNEL_UIDS ? dk->uid : 0; /* DQ_HOT_KEY */
      dk->max_flat = dd->max_flat_workgroup_size;
      if (d->info.max_workgroup_size && d->info.max_workgroup_size < dk->max_flat)
        dk->max_flat = d->info.max_workgroup_size;
      memcpy(dk->max_dim, d->info.max_workgroup_dim, sizeof dk->max_dim);
      for (int i = 0; i < 3; i++)
        dk->max_grid[i] = d->info.max_grid_dim[i] ? d->info.max_grid_dim[i] : UINT32_MAX;
      dk->max_grid_items = d->grid_max_size;
      dk->has_reqd = dd->reqd_workgroup_size[0] != 0;
      dk->dyn_stack = dd->uses_dynamic_stack;
    }
  }
  p->kernel_count = total;
  pthread_mutex_lock(&hsad_rt.lock);
  p->next = hsad_rt.programs;
  hsad_rt.programs = p;
  pthread_mutex_unlock(&hsad_rt.lock);
  *out_program = p;
  return HSAD_OK;
fail_exec:
  hsad_rocr.hsa_executable_destroy(p->executable);
fail:
  units_free(pu, true);
  return s;
}

/* Selects the container's entries for the device: the best of every bundle (one per HIP
 * translation unit; a bundle without an entry for the device contributes nothing), or of the
 * whole container when it has one bundle or none. No compatible entry at all is an ISA
 * mismatch naming both sides. */
static hsad_status_t load_container(hsad_device_t *d, hsad_codeobj_container_t *c,
                                    const char *label, hsad_program_t **out_program) {
  uint32_t nb = hsad_codeobj_container_bundle_count(c);
  uint32_t slots = nb > 1 ? nb : 1;
  hsad_codeobj_t **cos = calloc(slots, sizeof *cos);
  if (!cos) {
    hsad_codeobj_container_destroy(c);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of host memory", label);
  }
  uint32_t n = 0;
  hsad_status_t s = HSAD_OK;
  for (uint32_t b = 0; b < slots && !s; b++) {
    size_t idx = 0;
    s = nb > 1 ? hsad_codeobj_container_select_in_bundle(c, b, d->info.isa_names[0], &idx)
               : hsad_codeobj_container_select(c, d->info.isa_names[0], &idx);
    if (s == HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND) {
      s = HSAD_OK;
      continue;
    }
    if (!s) s = hsad_codeobj_load_entry(c, idx, &cos[n]);
    if (!s) n++;
  }
  if (!s && n == 0) {
    size_t count = hsad_codeobj_container_entry_count(c);
    char have[512] = "";
    for (size_t k = 0; k < count && strlen(have) < 400; k++) {
      if (k) strcat(have, ", ");
      strncat(have, hsad_codeobj_container_entry(c, k)->target, 100);
    }
    s = hsad_fail(HSAD_ERR_ISA_MISMATCH,
                  "%s: code object targets %s, device %u (%s) supports %s: compile for %s", label,
                  have[0] ? have : "nothing", d->info.index, d->info.name, d->info.isa_names[0],
                  d->info.isa_name);
  }
  hsad_codeobj_container_destroy(c);
  if (s) {
    for (uint32_t u = 0; u < n; u++) hsad_codeobj_destroy(cos[u]);
    free(cos);
    return s;
  }
  s = program_create(d, cos, n, out_program);
  free(cos);
  return s;
}

hsad_status_t hsad_program_load_file(hsad_device_t *device, const char *path,
                                     hsad_program_t **out_program) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_program_load_file", {device, "device"}, {path, "path"},
                                  {out_program, "out_program"});
  if (!s) s = dq_check_open();
  if (s) return s;
  if (DQ_FOREIGN(device)) {
    void *data = NULL;
    size_t size = 0;
    if ((s = hsad_backend_read_file(path, &data, &size)) != HSAD_OK) return s;
    s = device->ops->program_load(device, device->backend_device, data, size, path, out_program);
    free(data);
    return s;
  }
  hsad_codeobj_container_t *c = NULL;
  s = hsad_codeobj_container_open_file(path, &c);
  if (s) return s;
  return load_container(device, c, path, out_program);
}

hsad_status_t hsad_program_load_memory(hsad_device_t *device, const void *data, size_t size,
                                       const char *label, hsad_program_t **out_program) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_program_load_memory", {device, "device"}, {data, "data"},
                                  {out_program, "out_program"});
  if (s) return s;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_load_memory: size 0");
  s = dq_check_open();
  if (s) return s;
  if (DQ_FOREIGN(device))
    return device->ops->program_load(device, device->backend_device, data, size,
                                     label ? label : "<memory>", out_program);
  hsad_codeobj_container_t *c = NULL;
  s = hsad_codeobj_container_open_memory(data, size, label, &c);
  if (s) return s;
  return load_container(device, c, label ? label : "<memory>", out_program);
}

/* HSAD_ERR_IN_USE naming the kernel and the queue when a packet of one of p's kernels sits on
 * a live queue of p's device between the queue's `retired` bound (every id below it completed:
 * the completion timeline, refreshed from the epoch signal) and its write index. Such a slot
 * is never reused before it retired (dispatches reserve against `retired`), so its
 * kernel_object (bytes 32-39 of the packet) is still the one submitted, whatever the header
 * says (a packet processor writes it back to INVALID once launched). A faulted queue runs
 * nothing more and is skipped. Runtime lock held; the ring is read with relaxed loads. */
static hsad_status_t program_in_flight(const hsad_program_t *p) {
  for (hsad_queue_t *q = hsad_rt.queues; q; q = q->next) {
    if (q->device != p->device || atomic_load_explicit(&q->error, memory_order_acquire)) continue;
    uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
    uint64_t r = dq_retire(q);
    if (w - r > q->ring.size) r = w - q->ring.size;
    for (uint64_t id = r; id < w; id++) {
      const uint8_t *slot = dq_ring_slot(&q->ring, id);
      uint64_t ko = __atomic_load_n((const uint64_t *)(const void *)(slot + 32), __ATOMIC_RELAXED);
      for (uint32_t k = 0; k < p->kernel_count; k++) {
        if (p->kernels[k].desc.kernel_object != ko) continue;
        return hsad_fail(HSAD_ERR_IN_USE, "hsad_program_destroy(%s): kernel '%s' is in flight on "
                         "queue %llu of device %u (packet %llu, not known to have completed): "
                         "wait for a completion after it (hsad_completion_wait, "
                         "hsad_queue_wait_idle), then destroy the program",
                         hsad_codeobj_info(p->codeobj)->name, p->kernels[k].desc.name,
                         (unsigned long long)q->hsa->id, q->device->info.index,
                         (unsigned long long)id);
      }
    }
  }
  return HSAD_OK;
}

uint64_t hsad_submit_kernel_hold(const hsad_device_kernel_t *k) {
  if (!k || k->ops) return 0;
  __atomic_add_fetch(&((hsad_device_kernel_t *)k)->holders, 1, __ATOMIC_RELAXED);
  return k->uid;
}

void hsad_submit_kernel_release(const hsad_device_kernel_t *k, uint64_t token) {
  if (!token) return;
  pthread_mutex_lock(&hsad_rt.lock);
  for (hsad_program_t *p = hsad_rt.programs; p; p = p->next) {
    /* addresses compared before k is read: a destroyed program's kernel is not touched */
    if (k < p->kernels || k >= p->kernels + p->kernel_count) continue;
    if (k->uid == token)
      __atomic_sub_fetch(&((hsad_device_kernel_t *)k)->holders, 1, __ATOMIC_RELAXED);
    break;
  }
  pthread_mutex_unlock(&hsad_rt.lock);
}

/* HSAD_ERR_IN_USE naming the first kernel of p that a prepared launch, graph exec or variant set
 * still holds (hsad_submit_kernel_hold). */
static hsad_status_t program_held(const hsad_program_t *p) {
  for (uint32_t k = 0; k < p->kernel_count; k++) {
    uint32_t n = __atomic_load_n(&p->kernels[k].holders, __ATOMIC_RELAXED);
    if (n)
      return hsad_fail(HSAD_ERR_IN_USE, "hsad_program_destroy(%s): kernel '%s' is still held by "
                       "%u prepared launch(es), graph exec kernel node(s) or variant set(s), which "
                       "would submit its freed code: destroy them first (hsad_launch_destroy, "
                       "hsad_graph_exec_destroy, hsad_variant_set_destroy); the program stays "
                       "loaded", hsad_codeobj_info(p->codeobj)->name, p->kernels[k].desc.name, n);
  }
  return HSAD_OK;
}

hsad_status_t hsad_program_destroy(hsad_program_t *p) {
  if (!p) return HSAD_OK;
  if (p->ops) {
    p->ops->program_destroy(p);
    return HSAD_OK;
  }
  if (!p->dead && dq_is_open()) {
    pthread_mutex_lock(&hsad_rt.lock);
    hsad_status_t s = program_held(p);
    if (!s) s = program_in_flight(p);
    pthread_mutex_unlock(&hsad_rt.lock);
    if (s) return s;
  }
  program_unlink(p);
  bool live = !p->dead && dq_is_open();
  if (live) hsad_rocr.hsa_executable_destroy(p->executable);
  /* a closed runtime destroyed readers[0] with the executable (dq_queues_close_all) */
  units_free(units_of(p), live);
  return HSAD_OK;
}

/* An AMD code object; NULL for another vendor's program. */
const hsad_codeobj_t *hsad_program_codeobj(const hsad_program_t *p) {
  return p && !p->ops ? p->codeobj : NULL;
}
hsad_device_t *hsad_program_device(const hsad_program_t *p) {
  if (DQ_FOREIGN(p)) return p->ops->program_device(p);
  return p ? p->device : NULL;
}
uint32_t hsad_program_kernel_count(const hsad_program_t *p) {
  if (DQ_FOREIGN(p)) return p->ops->program_kernel_count(p);
  return p ? p->kernel_count : 0;
}

hsad_status_t hsad_program_kernel(const hsad_program_t *p, const char *name,
                                  const hsad_device_kernel_t **out_kernel) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_program_kernel", {p, "program"}, {name, "name"},
                                   {out_kernel, "out_kernel"});
  if (ns) return ns;
  if (p->ops) {
    hsad_status_t so = dq_check_open();
    return so ? so : p->ops->program_kernel(p, name, out_kernel);
  }
  if (p->dead || !dq_is_open())
    return hsad_fail(HSAD_ERR_CLOSED, "hsad_program_kernel(%s): the runtime was closed", name);
  const program_units_t *pu = units_of(p);
  const hsad_kernel_t *ck = NULL;
  hsad_status_t s = HSAD_OK;
  for (uint32_t u = 0; u < pu->unit_count; u++) {
    s = hsad_codeobj_kernel_find(pu->units[u], name, &ck);
    if (s == HSAD_ERR_KERNEL_NOT_FOUND) continue;
    if (s) return s;
    *out_kernel = &p->kernels[pu->kernel_base[u] + hsad_kernel_index(ck)];
    return HSAD_OK;
  }
  if (pu->unit_count == 1) return s; /* codeobj's message: file, kernel, kernel count */
  return hsad_fail(HSAD_ERR_KERNEL_NOT_FOUND,
                   "%s: no kernel named '%s' in its %u translation units (%u kernels)",
                   hsad_codeobj_info(p->codeobj)->name, name, pu->unit_count, p->kernel_count);
}

const hsad_device_kernel_t *hsad_program_kernel_at(const hsad_program_t *p, uint32_t i) {
  if (DQ_FOREIGN(p)) return p->ops->program_kernel_at(p, i);
  return p && i < p->kernel_count ? &p->kernels[i] : NULL;
}

const hsad_device_kernel_desc_t *hsad_device_kernel_desc(const hsad_device_kernel_t *k) {
  if (DQ_FOREIGN(k)) return k->ops->kernel_desc(k);
  return k ? &k->desc : NULL;
}
