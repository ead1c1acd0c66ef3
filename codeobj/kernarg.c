/* kernarg.c - the per-kernel kernarg plan and the hot-path kernarg builder.
 * Sources: AMDGPUUsage "Code Object V3+ Kernel Argument Metadata Map" (.offset, .size,
 * .value_kind, .pointee_align), "Code Object V5 Metadata" hidden arguments and their sizes;
 * field lessons: zero the whole .kernarg_segment_size block and write hidden arguments field by
 * field at the offsets the note declares (never a fixed implicit struct). */
#include "codeobj/codeobj_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hsad_status_t co_kernarg_plan_init(const char *name, co_arena_t *arena, hsad_kernel_t *k) {
  const hsad_kernel_info_t *ki = &k->info;
  hsad_kernarg_plan_t *p = &k->plan;
  memset(p, 0, sizeof *p);
  p->segment_size = ki->kernarg_segment_size;
  p->segment_align = ki->kernarg_segment_align < 16 ? 16 : ki->kernarg_segment_align;
  p->group_segment_fixed_size = ki->group_segment_fixed_size;
  uint32_t ne = 0, nh = 0;
  for (uint32_t i = 0; i < ki->arg_count; i++) {
    if (hsad_value_kind_is_hidden(ki->args[i].value_kind)) nh++;
    else ne++;
  }
  hsad_kernarg_slot_t *slots = NULL;
  if (ne + nh) {
    slots = co_arena_alloc(arena, (size_t)(ne + nh) * sizeof *slots);
    if (!slots) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
  }
  hsad_kernarg_slot_t *e = slots, *h = slots ? slots + ne : NULL;
  for (uint32_t i = 0; i < ki->arg_count; i++) {
    const hsad_kernel_arg_t *a = &ki->args[i];
    hsad_kernarg_slot_t s = {a->offset, a->size, a->value_kind, 0};
    if (a->value_kind == HSAD_VK_DYNAMIC_SHARED_POINTER) {
      s.align = a->pointee_align < 4 ? 4 : a->pointee_align;
      if (s.align & (s.align - 1))
        return hsad_fail(HSAD_ERR_METADATA_TYPE,
                         "%s: kernel '%s': argument %u .pointee_align %u is not a power of 2",
                         name, ki->name, i, a->pointee_align);
      if (a->size != 4 && a->size != 8)
        return hsad_fail(HSAD_ERR_METADATA_TYPE,
                         "%s: kernel '%s': dynamic_shared_pointer argument %u has .size %u, "
                         "expected 4 or 8",
                         name, ki->name, i, a->size);
      p->has_dynamic_lds = true;
    }
    if (hsad_value_kind_is_hidden(a->value_kind)) *h++ = s;
    else *e++ = s;
  }
  p->explicit_count = ne;
  p->explicit_args = slots;
  p->hidden_count = nh;
  p->hidden_args = slots ? slots + ne : NULL;
  return co_kernarg_types_init(name, arena, k);
}

/* The C++ parameter types of kernel k's mangled name, one per explicit argument (out: the
 * explicit count + 1 entries, malloc'd; NULL when the name gives none or not one per
 * argument, or out of memory). */
static char (*co_cxx_types(const hsad_kernel_t *k))[HSAD_CXX_TYPE_MAX] {
  uint32_t ne = k->plan.explicit_count;
  if (strncmp(k->info.name, "_Z", 2) != 0) return NULL;
  char(*cxx)[HSAD_CXX_TYPE_MAX] = calloc(ne + 1, sizeof *cxx);
  if (cxx && hsad_cxx_param_types(k->info.name, cxx, (int)ne) != (int)ne) {
    free(cxx);
    cxx = NULL;
  }
  return cxx;
}

/* The parameter type of explicit argument e of k as shown in messages: its .type_name, else
 * the mangled name's type, else "" (b: n bytes). */
static const char *co_arg_type_shown(const hsad_kernel_t *k, const hsad_kernel_arg_t *a,
                                     uint32_t e, char *b, size_t n) {
  snprintf(b, n, "%s", a->type_name);
  if (!b[0]) {
    char(*cxx)[HSAD_CXX_TYPE_MAX] = co_cxx_types(k);
    if (cxx) snprintf(b, n, "%s", cxx[e]);
    free(cxx);
  }
  return b;
}

/* Explicit argument e of k in .args. */
static const hsad_kernel_arg_t *co_explicit_arg(const hsad_kernel_t *k, uint32_t e) {
  for (uint32_t i = 0, seen = 0; i < k->info.arg_count; i++)
    if (!hsad_value_kind_is_hidden(k->info.args[i].value_kind) && seen++ == e)
      return &k->info.args[i];
  return NULL;
}

hsad_status_t co_kernarg_types_init(const char *name, co_arena_t *arena, hsad_kernel_t *k) {
  uint32_t ne = k->plan.explicit_count;
  k->arg_type = NULL;
  if (!ne) return HSAD_OK;
  uint8_t *types = co_arena_alloc(arena, ne);
  if (!types) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
  char(*cxx)[HSAD_CXX_TYPE_MAX] = NULL;
  bool cxx_tried = false;
  for (uint32_t e = 0; e < ne; e++) {
    const hsad_kernel_arg_t *a = co_explicit_arg(k, e);
    if (!a || a->value_kind != HSAD_VK_BY_VALUE) continue;
    char cls[HSAD_CXX_TYPE_MAX];
    snprintf(cls, sizeof cls, "%s", a->type_name);
    if (!cls[0]) { /* no .type_name (HIP): the mangled name's, demangled once per kernel */
      if (!cxx_tried) cxx = co_cxx_types(k);
      cxx_tried = true;
      if (cxx) hsad_cxx_type_class(cxx[e], cls, sizeof cls);
    }
    hsad_karg_type_t t;
    uint32_t width;
    if (hsad_type_name_classify(cls, &t, &width) == HSAD_TYPE_NAME_SCALAR) types[e] = (uint8_t)t;
  }
  free(cxx);
  k->arg_type = types;
  return HSAD_OK;
}

const hsad_kernarg_plan_t *hsad_kernel_kernarg_plan(const hsad_kernel_t *kernel) {
  return kernel ? &kernel->plan : NULL;
}

/* Writes the low `size` bytes of v little-endian; false when v does not fit. */
static inline bool co_put(uint8_t *dst, uint64_t v, uint32_t size) {
  switch (size) {
  case 8: memcpy(dst, &v, 8); return true;
  case 4: {
    uint32_t x = (uint32_t)v;
    memcpy(dst, &x, 4);
    return v <= UINT32_MAX;
  }
  case 2: {
    uint16_t x = (uint16_t)v;
    memcpy(dst, &x, 2);
    return v <= UINT16_MAX;
  }
  case 1: *dst = (uint8_t)v; return v <= UINT8_MAX;
  case 0: return v == 0;
  default:
    if (size > 8) {
      memcpy(dst, &v, 8); /* rest stays zero */
      return true;
    }
    for (uint32_t i = 0; i < size; i++) dst[i] = (uint8_t)(v >> (8 * i));
    return (v >> (8 * size)) == 0;
  }
}

/* "argument 3 ('n')", or "argument 3" when the metadata has no .name (OpenCL C without
 * -cl-kernel-arg-info): never an empty name in quotes. */
static const char *co_arg_label(char *b, size_t n, const hsad_kernel_t *k,
                                uint32_t explicit_index) {
  const char *name = "";
  uint32_t seen = 0;
  for (uint32_t i = 0; i < k->info.arg_count; i++) {
    if (hsad_value_kind_is_hidden(k->info.args[i].value_kind)) continue;
    if (seen++ == explicit_index) {
      name = k->info.args[i].name;
      break;
    }
  }
  if (name[0]) snprintf(b, n, "argument %u ('%s')", explicit_index, name);
  else snprintf(b, n, "argument %u", explicit_index);
  return b;
}

/* The type check of typed value v for explicit argument i of k (hsad_codeobj_kernarg.h): a
 * known type, the type's size for a SCALAR, and a floating-point value only for a
 * floating-point parameter, an integer only for an integer one. Cold. */
static __attribute__((noinline)) hsad_status_t co_karg_type_check(const hsad_kernel_t *k,
                                                                  uint32_t i,
                                                                  const hsad_karg_t *v) {
  const char *file = k->owner->info.name, *kname = k->info.name;
  char lab[160], shown[HSAD_CXX_TYPE_MAX];
  hsad_karg_type_t vt = (hsad_karg_type_t)v->type;
  if (!hsad_karg_type_name(vt))
    return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': %s: %s type %u (hsad_karg_type_t: 1 "
                     "to %u)", file, kname, co_arg_label(lab, sizeof lab, k, i),
                     vt ? "unknown" : "a SCALAR value needs a", (unsigned)vt,
                     HSAD_KARG_TYPE_COUNT_ - 1);
  if (v->size != hsad_karg_type_size(vt))
    return hsad_fail(HSAD_ERR_ARG_SIZE, "%s: kernel '%s': %s: a value of type %s has %u bytes, "
                     "its size says %u", file, kname, co_arg_label(lab, sizeof lab, k, i),
                     hsad_karg_type_name(vt), hsad_karg_type_size(vt), v->size);
  hsad_karg_type_t pt = k->arg_type ? (hsad_karg_type_t)k->arg_type[i] : HSAD_KARG_UNTYPED;
  if (pt == HSAD_KARG_UNTYPED || hsad_karg_type_is_float(pt) == hsad_karg_type_is_float(vt))
    return HSAD_OK;
  const hsad_kernel_arg_t *a = co_explicit_arg(k, i);
  return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': %s is %s (%s), the value given is %s "
                   "(%s)", file, kname, co_arg_label(lab, sizeof lab, k, i),
                   co_arg_type_shown(k, a, i, shown, sizeof shown),
                   hsad_karg_type_is_float(pt) ? "floating-point" : "integer",
                   hsad_karg_type_name(vt),
                   hsad_karg_type_is_float(vt) ? "floating-point" : "integer");
}

hsad_status_t hsad_kernarg_build(const hsad_kernel_t *kernel, const hsad_karg_t *args,
                                 uint32_t arg_count, const hsad_dispatch_dims_t *dims,
                                 const hsad_kernarg_runtime_t *runtime, void *out,
                                 size_t out_size, uint32_t *out_group_segment_size) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernarg_build", {kernel, "kernel"}, {dims, "dims"});
  if (ns) return ns;
  if (arg_count && !args)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernarg_build: NULL args with arg_count %u",
                     arg_count);
  if (!out && kernel->plan.segment_size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernarg_build: NULL out for a %u-byte "
                     "kernarg segment", (unsigned)kernel->plan.segment_size);
  const hsad_kernarg_plan_t *p = &kernel->plan;
  const char *kname = kernel->info.name;
  const char *file = kernel->owner->info.name;
  if (((uintptr_t)out & 15u) != 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                     "%s: kernel '%s': kernarg buffer %p is not 16-byte aligned", file, kname, out);
  if (out_size < p->segment_size)
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED,
                     "%s: kernel '%s': kernarg buffer of %zu bytes, .kernarg_segment_size is %u",
                     file, kname, out_size, p->segment_size);
  if (arg_count != p->explicit_count)
    return hsad_fail(HSAD_ERR_ARG_COUNT, "%s: kernel '%s' takes %u explicit arguments, got %u",
                     file, kname, p->explicit_count, arg_count);
  if (dims->dims < 1 || dims->dims > 3)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: kernel '%s': dims %u, expected 1..3", file,
                     kname, dims->dims);
  for (int d = 0; d < 3; d++)
    if (!dims->grid_size[d] || !dims->workgroup_size[d])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                       "%s: kernel '%s': grid_size[%d] = %u, workgroup_size[%d] = %u: each must "
                       "be >= 1 (1 for unused dimensions)",
                       file, kname, d, dims->grid_size[d], d, dims->workgroup_size[d]);
  static const hsad_kernarg_runtime_t zero_rt;
  if (!runtime) runtime = &zero_rt;
  uint8_t *base = out;
  char lab[160]; /* an argument's label in messages */
  if (p->segment_size) memset(base, 0, p->segment_size);

  uint64_t lds = p->group_segment_fixed_size;
  for (uint32_t i = 0; i < p->explicit_count; i++) {
    const hsad_kernarg_slot_t *s = &p->explicit_args[i];
    const hsad_karg_t *v = &args[i];
    uint8_t *dst = base + s->offset;
    switch (v->tag) {
    case HSAD_KARG_BYTES:
    case HSAD_KARG_SCALAR:
      if (s->kind == HSAD_VK_DYNAMIC_SHARED_POINTER)
        return hsad_fail(HSAD_ERR_ARG_KIND,
                         "%s: kernel '%s': %s is a dynamic_shared_pointer: pass "
                         "HSAD_KARG_LDS_BYTES(n), not bytes",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i));
      if (s->kind == HSAD_VK_GLOBAL_BUFFER) /* an integer holding an address (issue 21) */
        return hsad_fail(HSAD_ERR_ARG_KIND,
                         "%s: kernel '%s': %s is a global_buffer (a pointer): pass "
                         "HSAD_KARG_PTR(p) or HSAD_KARG_VAL of a pointer variable, not %u bytes",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i), v->size);
      if (v->size != s->size)
        return hsad_fail(HSAD_ERR_ARG_SIZE,
                         "%s: kernel '%s': %s has .size %u, value has %u bytes",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i), s->size, v->size);
      if (v->type || v->tag == HSAD_KARG_SCALAR) {
        hsad_status_t st = co_karg_type_check(kernel, i, v);
        if (st) return st;
      }
      if (v->tag == HSAD_KARG_SCALAR) {
        memcpy(dst, &v->scalar, s->size); /* size <= 8: the type's (checked) */
        break;
      }
      if (s->size) {
        if (!v->bytes)
          return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                           "%s: kernel '%s': %s: NULL bytes", file, kname,
                           co_arg_label(lab, sizeof lab, kernel, i));
        memcpy(dst, v->bytes, s->size);
      }
      break;
    case HSAD_KARG_POINTER:
      if (v->type) goto typed_other;
      if (s->kind != HSAD_VK_GLOBAL_BUFFER && s->kind != HSAD_VK_IMAGE &&
          s->kind != HSAD_VK_SAMPLER && s->kind != HSAD_VK_PIPE && s->kind != HSAD_VK_QUEUE)
        return hsad_fail(HSAD_ERR_ARG_KIND,
                         "%s: kernel '%s': %s is %s, a pointer value needs "
                         "global_buffer, image, sampler, pipe or queue",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i),
                         hsad_value_kind_name(s->kind));
      if (s->size != 8 && s->size != 4)
        return hsad_fail(HSAD_ERR_ARG_SIZE,
                         "%s: kernel '%s': %s has .size %u, a pointer needs 4 "
                         "or 8",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i), s->size);
      if (!co_put(dst, v->pointer, s->size))
        return hsad_fail(HSAD_ERR_ARG_VALUE,
                         "%s: kernel '%s': %s: pointer 0x%llx does not fit its "
                         "%u-byte slot",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i),
                         (unsigned long long)v->pointer,
                         s->size);
      break;
    case HSAD_KARG_LDS:
      if (v->type) goto typed_other;
      if (s->kind != HSAD_VK_DYNAMIC_SHARED_POINTER)
        return hsad_fail(HSAD_ERR_ARG_KIND,
                         "%s: kernel '%s': %s is %s, an LDS size needs a "
                         "dynamic_shared_pointer",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i),
                         hsad_value_kind_name(s->kind));
      lds = (lds + s->align - 1) & ~(uint64_t)(s->align - 1);
      co_put(dst, lds, s->size);
      lds += v->lds_bytes;
      if (lds > UINT32_MAX)
        return hsad_fail(HSAD_ERR_ARG_VALUE,
                         "%s: kernel '%s': %s: group segment reaches %llu bytes, "
                         "above 4 GiB",
                         file, kname, co_arg_label(lab, sizeof lab, kernel, i),
                         (unsigned long long)lds);
      break;
    default:
      return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': argument %u: unknown tag %d", file,
                       kname, i, (int)v->tag);
    typed_other:
      return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': %s: a %s value with type %u (a type "
                       "is for HSAD_KARG_BYTES and HSAD_KARG_SCALAR only; 0 here)", file, kname,
                       co_arg_label(lab, sizeof lab, kernel, i),
                       v->tag == HSAD_KARG_POINTER ? "pointer" : "LDS", (unsigned)v->type);
    }
  }

  /* one division per dimension gives both block count and remainder */
  uint32_t blocks[3], rem[3];
  for (int d = 0; d < 3; d++) {
    blocks[d] = dims->grid_size[d] / dims->workgroup_size[d];
    rem[d] = dims->grid_size[d] - blocks[d] * dims->workgroup_size[d];
  }
  /* Every hidden value once, indexed by kind; then one table read per declared slot (no
   * per-slot dispatch on the kind). hidden_none has value 0: writing it leaves the zero. */
  _Static_assert(HSAD_VK_HIDDEN_QUEUE_PTR + 1 == HSAD_VK_COUNT_,
                 "a new hidden value kind needs its val[] entry below");
  uint64_t val[HSAD_VK_COUNT_];
  val[HSAD_VK_HIDDEN_GLOBAL_OFFSET_X] = dims->global_offset[0];
  val[HSAD_VK_HIDDEN_GLOBAL_OFFSET_Y] = dims->global_offset[1];
  val[HSAD_VK_HIDDEN_GLOBAL_OFFSET_Z] = dims->global_offset[2];
  val[HSAD_VK_HIDDEN_NONE] = 0;
  val[HSAD_VK_HIDDEN_PRINTF_BUFFER] = runtime->printf_buffer;
  val[HSAD_VK_HIDDEN_HOSTCALL_BUFFER] = runtime->hostcall_buffer;
  val[HSAD_VK_HIDDEN_DEFAULT_QUEUE] = runtime->default_queue;
  val[HSAD_VK_HIDDEN_COMPLETION_ACTION] = runtime->completion_action;
  val[HSAD_VK_HIDDEN_MULTIGRID_SYNC_ARG] = runtime->multigrid_sync_arg;
  val[HSAD_VK_HIDDEN_BLOCK_COUNT_X] = blocks[0];
  val[HSAD_VK_HIDDEN_BLOCK_COUNT_Y] = blocks[1];
  val[HSAD_VK_HIDDEN_BLOCK_COUNT_Z] = blocks[2];
  val[HSAD_VK_HIDDEN_GROUP_SIZE_X] = dims->workgroup_size[0];
  val[HSAD_VK_HIDDEN_GROUP_SIZE_Y] = dims->workgroup_size[1];
  val[HSAD_VK_HIDDEN_GROUP_SIZE_Z] = dims->workgroup_size[2];
  val[HSAD_VK_HIDDEN_REMAINDER_X] = rem[0];
  val[HSAD_VK_HIDDEN_REMAINDER_Y] = rem[1];
  val[HSAD_VK_HIDDEN_REMAINDER_Z] = rem[2];
  val[HSAD_VK_HIDDEN_GRID_DIMS] = dims->dims;
  val[HSAD_VK_HIDDEN_HEAP_V1] = runtime->heap_v1;
  val[HSAD_VK_HIDDEN_DYNAMIC_LDS_SIZE] = lds - p->group_segment_fixed_size;
  val[HSAD_VK_HIDDEN_PRIVATE_BASE] = runtime->private_base;
  val[HSAD_VK_HIDDEN_SHARED_BASE] = runtime->shared_base;
  val[HSAD_VK_HIDDEN_QUEUE_PTR] = runtime->queue_ptr;
  for (uint32_t i = 0; i < p->hidden_count; i++) {
    const hsad_kernarg_slot_t *s = &p->hidden_args[i];
    uint64_t v = val[s->kind]; /* the plan holds hidden kinds only (checked at load) */
    uint8_t *dst = base + s->offset;
    bool fits;
    if (s->size == 8) {
      memcpy(dst, &v, 8);
      fits = true;
    } else if (s->size == 4) {
      uint32_t x = (uint32_t)v;
      memcpy(dst, &x, 4);
      fits = v <= UINT32_MAX;
    } else if (s->size == 2) {
      uint16_t x = (uint16_t)v;
      memcpy(dst, &x, 2);
      fits = v <= UINT16_MAX;
    } else {
      fits = co_put(dst, v, s->size);
    }
    if (!fits)
      return hsad_fail(HSAD_ERR_ARG_VALUE,
                       "%s: kernel '%s': hidden argument %s = %llu does not fit its declared "
                       ".size %u at .offset %u",
                       file, kname, hsad_value_kind_name(s->kind), (unsigned long long)v, s->size,
                       s->offset);
  }
  if (out_group_segment_size) *out_group_segment_size = (uint32_t)lds;
  return HSAD_OK;
}
