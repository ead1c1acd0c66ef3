/* metadata.c - the NT_AMDGPU_METADATA msgpack map decoded with msgpack-c into hsad_kernel_info_t.
 * Sources: AMDGPUUsage "Code Object V3 Metadata" (amdhsa.version, amdhsa.kernels, kernel and
 * argument maps), "Code Object V4 Metadata" (amdhsa.target), "Code Object V5 Metadata" (v5
 * hidden value kinds, .uses_dynamic_stack). Unknown keys are ignored (forward compatible);
 * known keys of the wrong type, missing required keys and unknown enum strings are errors. */
#include "codeobj/codeobj_internal.h"

#include <msgpack.h>
#include <stdio.h>
#include <string.h>

typedef struct co_md {
  const char *name;    /* file name for messages */
  hsad_codeobj_t *co;
  const char *kernel;  /* current kernel name for messages ("#3" until .name is known) */
  char kernel_buf[32];
} co_md_t;

static bool co_key_is(const msgpack_object *k, const char *s) {
  size_t n = strlen(s);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && !memcmp(k->via.str.ptr, s, n);
}

static const char *co_type_name(msgpack_object_type t) {
  switch (t) {
  case MSGPACK_OBJECT_NIL: return "nil";
  case MSGPACK_OBJECT_BOOLEAN: return "boolean";
  case MSGPACK_OBJECT_POSITIVE_INTEGER: return "unsigned integer";
  case MSGPACK_OBJECT_NEGATIVE_INTEGER: return "negative integer";
  case MSGPACK_OBJECT_FLOAT32:
  case MSGPACK_OBJECT_FLOAT64: return "float";
  case MSGPACK_OBJECT_STR: return "string";
  case MSGPACK_OBJECT_ARRAY: return "array";
  case MSGPACK_OBJECT_MAP: return "map";
  case MSGPACK_OBJECT_BIN: return "binary";
  case MSGPACK_OBJECT_EXT: return "extension";
  }
  return "unknown";
}

static hsad_status_t co_type_error(co_md_t *md, const char *field, const char *want,
                                   const msgpack_object *got) {
  return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: kernel '%s': field %s is a %s, expected %s",
                   md->name, md->kernel, field, co_type_name(got->type), want);
}

static hsad_status_t co_get_u32(co_md_t *md, const char *field, const msgpack_object *o,
                                uint32_t *out) {
  if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
    return co_type_error(md, field, "an unsigned integer", o);
  if (o->via.u64 > UINT32_MAX)
    return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: kernel '%s': field %s is %llu, above 2^32-1",
                     md->name, md->kernel, field, (unsigned long long)o->via.u64);
  *out = (uint32_t)o->via.u64;
  return HSAD_OK;
}

static hsad_status_t co_get_str(co_md_t *md, const char *field, const msgpack_object *o,
                                const char **out) {
  if (o->type != MSGPACK_OBJECT_STR) return co_type_error(md, field, "a string", o);
  char *s = co_arena_strndup(&md->co->arena, o->via.str.ptr, o->via.str.size);
  if (!s) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", md->name);
  *out = s;
  return HSAD_OK;
}

static hsad_status_t co_get_bool(co_md_t *md, const char *field, const msgpack_object *o,
                                 bool *out) {
  if (o->type != MSGPACK_OBJECT_BOOLEAN) return co_type_error(md, field, "a boolean", o);
  *out = o->via.boolean;
  return HSAD_OK;
}

static hsad_status_t co_get_u32_array(co_md_t *md, const char *field, const msgpack_object *o,
                                      uint32_t n, uint32_t *out) {
  if (o->type != MSGPACK_OBJECT_ARRAY) return co_type_error(md, field, "an array", o);
  if (o->via.array.size != n)
    return hsad_fail(HSAD_ERR_METADATA_TYPE,
                     "%s: kernel '%s': field %s has %u elements, expected %u", md->name,
                     md->kernel, field, o->via.array.size, n);
  for (uint32_t i = 0; i < n; i++) {
    hsad_status_t st = co_get_u32(md, field, &o->via.array.ptr[i], &out[i]);
    if (st) return st;
  }
  return HSAD_OK;
}

/* ---- enum strings ---- */
static const char *const co_vk_names[HSAD_VK_COUNT_] = {
    [HSAD_VK_BY_VALUE] = "by_value",
    [HSAD_VK_GLOBAL_BUFFER] = "global_buffer",
    [HSAD_VK_DYNAMIC_SHARED_POINTER] = "dynamic_shared_pointer",
    [HSAD_VK_SAMPLER] = "sampler",
    [HSAD_VK_IMAGE] = "image",
    [HSAD_VK_PIPE] = "pipe",
    [HSAD_VK_QUEUE] = "queue",
    [HSAD_VK_HIDDEN_GLOBAL_OFFSET_X] = "hidden_global_offset_x",
    [HSAD_VK_HIDDEN_GLOBAL_OFFSET_Y] = "hidden_global_offset_y",
    [HSAD_VK_HIDDEN_GLOBAL_OFFSET_Z] = "hidden_global_offset_z",
    [HSAD_VK_HIDDEN_NONE] = "hidden_none",
    [HSAD_VK_HIDDEN_PRINTF_BUFFER] = "hidden_printf_buffer",
    [HSAD_VK_HIDDEN_HOSTCALL_BUFFER] = "hidden_hostcall_buffer",
    [HSAD_VK_HIDDEN_DEFAULT_QUEUE] = "hidden_default_queue",
    [HSAD_VK_HIDDEN_COMPLETION_ACTION] = "hidden_completion_action",
    [HSAD_VK_HIDDEN_MULTIGRID_SYNC_ARG] = "hidden_multigrid_sync_arg",
    [HSAD_VK_HIDDEN_BLOCK_COUNT_X] = "hidden_block_count_x",
    [HSAD_VK_HIDDEN_BLOCK_COUNT_Y] = "hidden_block_count_y",
    [HSAD_VK_HIDDEN_BLOCK_COUNT_Z] = "hidden_block_count_z",
    [HSAD_VK_HIDDEN_GROUP_SIZE_X] = "hidden_group_size_x",
    [HSAD_VK_HIDDEN_GROUP_SIZE_Y] = "hidden_group_size_y",
    [HSAD_VK_HIDDEN_GROUP_SIZE_Z] = "hidden_group_size_z",
    [HSAD_VK_HIDDEN_REMAINDER_X] = "hidden_remainder_x",
    [HSAD_VK_HIDDEN_REMAINDER_Y] = "hidden_remainder_y",
    [HSAD_VK_HIDDEN_REMAINDER_Z] = "hidden_remainder_z",
    [HSAD_VK_HIDDEN_GRID_DIMS] = "hidden_grid_dims",
    [HSAD_VK_HIDDEN_HEAP_V1] = "hidden_heap_v1",
    [HSAD_VK_HIDDEN_DYNAMIC_LDS_SIZE] = "hidden_dynamic_lds_size",
    [HSAD_VK_HIDDEN_PRIVATE_BASE] = "hidden_private_base",
    [HSAD_VK_HIDDEN_SHARED_BASE] = "hidden_shared_base",
    [HSAD_VK_HIDDEN_QUEUE_PTR] = "hidden_queue_ptr",
};
static const char *const co_as_names[] = {NULL,       "private", "global", "constant",
                                          "local",    "generic", "region"};
static const char *const co_access_names[] = {NULL, "read_only", "write_only", "read_write"};

const char *hsad_value_kind_name(hsad_value_kind_t kind) {
  return (unsigned)kind < HSAD_VK_COUNT_ ? co_vk_names[kind] : NULL;
}
const char *hsad_address_space_name(hsad_address_space_t as) {
  return (unsigned)as < sizeof co_as_names / sizeof co_as_names[0] ? co_as_names[as] : NULL;
}
const char *hsad_access_name(hsad_access_t a) {
  return (unsigned)a < sizeof co_access_names / sizeof co_access_names[0] ? co_access_names[a]
                                                                          : NULL;
}
bool hsad_value_kind_is_hidden(hsad_value_kind_t kind) {
  return kind >= HSAD_VK_HIDDEN_GLOBAL_OFFSET_X && kind < HSAD_VK_COUNT_;
}

static int co_lookup(const msgpack_object *o, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (names[i] && strlen(names[i]) == o->via.str.size &&
        !memcmp(names[i], o->via.str.ptr, o->via.str.size))
      return i;
  return -1;
}

/* ---- one argument map ---- */
static hsad_status_t co_decode_arg(co_md_t *md, uint32_t index, const msgpack_object *m,
                                   hsad_kernel_arg_t *a) {
  char field[48];
  if (m->type != MSGPACK_OBJECT_MAP) {
    snprintf(field, sizeof field, ".args[%u]", index);
    return co_type_error(md, field, "a map", m);
  }
  a->name = a->type_name = "";
  bool have_offset = false, have_size = false, have_kind = false;
  hsad_status_t st = HSAD_OK;
  for (uint32_t i = 0; i < m->via.map.size && !st; i++) {
    const msgpack_object *k = &m->via.map.ptr[i].key, *v = &m->via.map.ptr[i].val;
    if (k->type != MSGPACK_OBJECT_STR) continue;
    snprintf(field, sizeof field, ".args[%u]%.*s", index,
             (int)(k->via.str.size > 30 ? 30 : k->via.str.size), k->via.str.ptr);
    if (co_key_is(k, ".name")) {
      st = co_get_str(md, field, v, &a->name);
      a->present |= HSAD_ARG_HAS_NAME;
    } else if (co_key_is(k, ".type_name")) {
      st = co_get_str(md, field, v, &a->type_name);
      a->present |= HSAD_ARG_HAS_TYPE_NAME;
    } else if (co_key_is(k, ".offset")) {
      st = co_get_u32(md, field, v, &a->offset);
      have_offset = true;
    } else if (co_key_is(k, ".size")) {
      st = co_get_u32(md, field, v, &a->size);
      have_size = true;
    } else if (co_key_is(k, ".pointee_align")) {
      st = co_get_u32(md, field, v, &a->pointee_align);
      a->present |= HSAD_ARG_HAS_POINTEE_ALIGN;
    } else if (co_key_is(k, ".value_kind")) {
      if (v->type != MSGPACK_OBJECT_STR) return co_type_error(md, field, "a string", v);
      int x = co_lookup(v, co_vk_names, HSAD_VK_COUNT_);
      if (x < 0)
        return hsad_fail(HSAD_ERR_UNKNOWN_VALUE_KIND,
                         "%s: kernel '%s': argument %u has unknown .value_kind '%.*s'", md->name,
                         md->kernel, index, (int)(v->via.str.size > 64 ? 64 : v->via.str.size),
                         v->via.str.ptr);
      a->value_kind = (hsad_value_kind_t)x;
      have_kind = true;
    } else if (co_key_is(k, ".address_space")) {
      if (v->type != MSGPACK_OBJECT_STR) return co_type_error(md, field, "a string", v);
      int x = co_lookup(v, co_as_names, 7);
      if (x < 0)
        return hsad_fail(HSAD_ERR_METADATA_TYPE,
                         "%s: kernel '%s': argument %u has unknown .address_space '%.*s'",
                         md->name, md->kernel, index,
                         (int)(v->via.str.size > 64 ? 64 : v->via.str.size), v->via.str.ptr);
      a->address_space = (hsad_address_space_t)x;
      a->present |= HSAD_ARG_HAS_ADDRESS_SPACE;
    } else if (co_key_is(k, ".access") || co_key_is(k, ".actual_access")) {
      bool actual = k->via.str.size == 14;
      if (v->type != MSGPACK_OBJECT_STR) return co_type_error(md, field, "a string", v);
      int x = co_lookup(v, co_access_names, 4);
      if (x < 0)
        return hsad_fail(HSAD_ERR_METADATA_TYPE,
                         "%s: kernel '%s': argument %u has unknown %s '%.*s'", md->name,
                         md->kernel, index, actual ? ".actual_access" : ".access",
                         (int)(v->via.str.size > 64 ? 64 : v->via.str.size), v->via.str.ptr);
      if (actual) {
        a->actual_access = (hsad_access_t)x;
        a->present |= HSAD_ARG_HAS_ACTUAL_ACCESS;
      } else {
        a->access = (hsad_access_t)x;
        a->present |= HSAD_ARG_HAS_ACCESS;
      }
    } else if (co_key_is(k, ".is_const")) {
      st = co_get_bool(md, field, v, &a->is_const);
      a->present |= HSAD_ARG_HAS_IS_CONST;
    } else if (co_key_is(k, ".is_restrict")) {
      st = co_get_bool(md, field, v, &a->is_restrict);
      a->present |= HSAD_ARG_HAS_IS_RESTRICT;
    } else if (co_key_is(k, ".is_volatile")) {
      st = co_get_bool(md, field, v, &a->is_volatile);
      a->present |= HSAD_ARG_HAS_IS_VOLATILE;
    } else if (co_key_is(k, ".is_pipe")) {
      st = co_get_bool(md, field, v, &a->is_pipe);
      a->present |= HSAD_ARG_HAS_IS_PIPE;
    }
  }
  if (st) return st;
  const char *missing = !have_offset ? ".offset" : !have_size ? ".size"
                        : !have_kind ? ".value_kind" : NULL;
  if (missing)
    return hsad_fail(HSAD_ERR_METADATA_TYPE,
                     "%s: kernel '%s': argument %u has no %s (required)", md->name, md->kernel,
                     index, missing);
  return HSAD_OK;
}

/* ---- one kernel map ---- */
enum { CO_F_U32, CO_F_STR, CO_F_BOOL, CO_F_ARR2, CO_F_ARR3 };
static const struct {
  const char *key;
  uint8_t type;
  uint8_t required;
  uint16_t offset;
  uint32_t present;
} co_kfields[] = {
#define F(key, type, req, member, bit) {key, type, req, offsetof(hsad_kernel_info_t, member), bit}
    F(".name", CO_F_STR, 1, name, 0),
    F(".symbol", CO_F_STR, 1, symbol, 0),
    F(".language", CO_F_STR, 0, language, HSAD_KI_HAS_LANGUAGE),
    F(".language_version", CO_F_ARR2, 0, language_version, HSAD_KI_HAS_LANGUAGE_VERSION),
    F(".kind", CO_F_STR, 0, kind, HSAD_KI_HAS_KIND),
    F(".vec_type_hint", CO_F_STR, 0, vec_type_hint, HSAD_KI_HAS_VEC_TYPE_HINT),
    F(".device_enqueue_symbol", CO_F_STR, 0, device_enqueue_symbol,
      HSAD_KI_HAS_DEVICE_ENQUEUE_SYMBOL),
    F(".reqd_workgroup_size", CO_F_ARR3, 0, reqd_workgroup_size,
      HSAD_KI_HAS_REQD_WORKGROUP_SIZE),
    F(".workgroup_size_hint", CO_F_ARR3, 0, workgroup_size_hint,
      HSAD_KI_HAS_WORKGROUP_SIZE_HINT),
    F(".kernarg_segment_size", CO_F_U32, 1, kernarg_segment_size, 0),
    F(".kernarg_segment_align", CO_F_U32, 1, kernarg_segment_align, 0),
    F(".group_segment_fixed_size", CO_F_U32, 1, group_segment_fixed_size, 0),
    F(".private_segment_fixed_size", CO_F_U32, 1, private_segment_fixed_size, 0),
    F(".wavefront_size", CO_F_U32, 1, wavefront_size, 0),
    F(".sgpr_count", CO_F_U32, 1, sgpr_count, 0),
    F(".vgpr_count", CO_F_U32, 1, vgpr_count, 0),
    F(".agpr_count", CO_F_U32, 0, agpr_count, HSAD_KI_HAS_AGPR_COUNT),
    F(".sgpr_spill_count", CO_F_U32, 0, sgpr_spill_count, HSAD_KI_HAS_SGPR_SPILL_COUNT),
    F(".vgpr_spill_count", CO_F_U32, 0, vgpr_spill_count, HSAD_KI_HAS_VGPR_SPILL_COUNT),
    F(".max_flat_workgroup_size", CO_F_U32, 1, max_flat_workgroup_size, 0),
    F(".uses_dynamic_stack", CO_F_BOOL, 0, uses_dynamic_stack, HSAD_KI_HAS_USES_DYNAMIC_STACK),
    F(".workgroup_processor_mode", CO_F_BOOL, 0, workgroup_processor_mode, HSAD_KI_HAS_WGP_MODE),
    F(".uniform_work_group_size", CO_F_BOOL, 0, uniform_work_group_size,
      HSAD_KI_HAS_UNIFORM_WORK_GROUP_SIZE),
#undef F
};
enum { CO_NKFIELDS = sizeof co_kfields / sizeof co_kfields[0] };

static hsad_status_t co_decode_kernel(co_md_t *md, uint32_t index, const msgpack_object *m,
                                      hsad_kernel_info_t *ki) {
  snprintf(md->kernel_buf, sizeof md->kernel_buf, "#%u", index);
  md->kernel = md->kernel_buf;
  if (m->type != MSGPACK_OBJECT_MAP)
    return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.kernels[%u] is a %s, expected a map",
                     md->name, index, co_type_name(m->type));
  ki->language = ki->kind = ki->vec_type_hint = ki->device_enqueue_symbol = "";
  /* .name first so later messages can name the kernel */
  for (uint32_t i = 0; i < m->via.map.size; i++)
    if (co_key_is(&m->via.map.ptr[i].key, ".name")) {
      hsad_status_t st = co_get_str(md, ".name", &m->via.map.ptr[i].val, &ki->name);
      if (st) return st;
      md->kernel = ki->name;
    }
  uint32_t seen = 0; /* bit per co_kfields entry */
  const msgpack_object *args = NULL;
  for (uint32_t i = 0; i < m->via.map.size; i++) {
    const msgpack_object *k = &m->via.map.ptr[i].key, *v = &m->via.map.ptr[i].val;
    if (k->type != MSGPACK_OBJECT_STR) continue;
    if (co_key_is(k, ".args")) {
      if (v->type != MSGPACK_OBJECT_ARRAY) return co_type_error(md, ".args", "an array", v);
      args = v;
      ki->present |= HSAD_KI_HAS_ARGS;
      continue;
    }
    for (int f = 0; f < CO_NKFIELDS; f++) {
      if (!co_key_is(k, co_kfields[f].key)) continue;
      void *dst = (char *)ki + co_kfields[f].offset;
      const char *fn = co_kfields[f].key;
      hsad_status_t st = HSAD_OK;
      switch (co_kfields[f].type) {
      case CO_F_U32: st = co_get_u32(md, fn, v, dst); break;
      case CO_F_STR: st = co_get_str(md, fn, v, dst); break;
      case CO_F_BOOL: st = co_get_bool(md, fn, v, dst); break;
      case CO_F_ARR2: st = co_get_u32_array(md, fn, v, 2, dst); break;
      case CO_F_ARR3: st = co_get_u32_array(md, fn, v, 3, dst); break;
      }
      if (st) return st;
      seen |= 1u << f;
      ki->present |= co_kfields[f].present;
      break;
    }
  }
  for (int f = 0; f < CO_NKFIELDS; f++)
    if (co_kfields[f].required && !(seen & (1u << f)))
      return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: kernel '%s': required field %s is missing",
                       md->name, md->kernel, co_kfields[f].key);
  if (!ki->name[0])
    return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.kernels[%u]: .name is empty", md->name,
                     index);
  uint32_t al = ki->kernarg_segment_align;
  if (al == 0 || (al & (al - 1)))
    return hsad_fail(HSAD_ERR_METADATA_TYPE,
                     "%s: kernel '%s': .kernarg_segment_align %u is not a power of 2", md->name,
                     md->kernel, al);
  if (ki->wavefront_size != 32 && ki->wavefront_size != 64)
    return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: kernel '%s': .wavefront_size %u, expected 32 "
                     "or 64", md->name, md->kernel, ki->wavefront_size);
  if (args && args->via.array.size) {
    uint32_t n = args->via.array.size;
    hsad_kernel_arg_t *a = co_arena_alloc(&md->co->arena, (size_t)n * sizeof *a);
    if (!a) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", md->name);
    uint32_t kept = 0;
    for (uint32_t j = 0; j < n; j++) {
      hsad_status_t st = co_decode_arg(md, j, &args->via.array.ptr[j], &a[kept]);
      if (st) return st;
      if ((uint64_t)a[kept].offset + a[kept].size > ki->kernarg_segment_size) {
        /* A partial hidden block (amdgpu-implicitarg-num-bytes below the full block): the
         * note may list hidden arguments the segment does not hold (AMDGPU.jl #10, llvm PR
         * #142199). They are absent: dropped, so nothing is ever written past the segment.
         * An explicit argument past the segment stays an error. */
        if (hsad_value_kind_is_hidden(a[kept].value_kind)) {
          ki->hidden_args_beyond_segment++;
          continue;
        }
        return hsad_fail(HSAD_ERR_METADATA_TYPE,
                         "%s: kernel '%s': argument %u (.offset %u, .size %u) extends past "
                         ".kernarg_segment_size %u",
                         md->name, md->kernel, j, a[kept].offset, a[kept].size,
                         ki->kernarg_segment_size);
      }
      kept++;
    }
    ki->args = a;
    ki->arg_count = kept;
  }
  return HSAD_OK;
}

/* Guard in front of msgpack-c: msgpack_unpack_next allocates a declared array/map count up front
 * (24 bytes per element, before reading any element), so a 5-byte header claiming 2^32 elements
 * asks for 100 GB. This walk over the framing bytes (msgpack spec: type byte, length fields; no
 * value is interpreted) checks that every declared count and length fits in the bytes that
 * remain, so msgpack-c's allocations stay proportional to the note size. Returns 0 when the
 * first object is complete and plausible, 1 when the data ends inside it, -1 on a malformed
 * byte or nesting deeper than msgpack-c accepts. */
static int co_msgpack_bounds_ok(const uint8_t *p, size_t n) {
  uint64_t pending[40]; /* items left per open container; [0] is the root */
  int depth = 0;
  pending[0] = 1;
  size_t i = 0;
  while (depth >= 0) {
    if (pending[depth] == 0) {
      depth--;
      continue;
    }
    pending[depth]--;
    if (i >= n) return 1;
    uint8_t t = p[i++];
    uint64_t skip = 0, items = 0;
    int lenbytes = 0, container = 0;
    if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
      skip = 0;
    } else if (t >= 0x80 && t <= 0x8f) {
      items = 2u * (t & 0x0fu);
      container = 1;
    } else if (t >= 0x90 && t <= 0x9f) {
      items = t & 0x0fu;
      container = 1;
    } else if (t >= 0xa0 && t <= 0xbf) {
      skip = t & 0x1fu;
    } else {
      switch (t) {
      case 0xc4: case 0xd9: lenbytes = 1; break;            /* bin8, str8 */
      case 0xc5: case 0xda: lenbytes = 2; break;            /* bin16, str16 */
      case 0xc6: case 0xdb: lenbytes = 4; break;            /* bin32, str32 */
      case 0xc7: lenbytes = 1; skip = 1; break;             /* ext8: + type byte */
      case 0xc8: lenbytes = 2; skip = 1; break;
      case 0xc9: lenbytes = 4; skip = 1; break;
      case 0xca: skip = 4; break;                           /* float32 */
      case 0xcb: skip = 8; break;                           /* float64 */
      case 0xcc: case 0xd0: skip = 1; break;
      case 0xcd: case 0xd1: skip = 2; break;
      case 0xce: case 0xd2: skip = 4; break;
      case 0xcf: case 0xd3: skip = 8; break;
      case 0xd4: skip = 2; break;                           /* fixext 1..16: type + data */
      case 0xd5: skip = 3; break;
      case 0xd6: skip = 5; break;
      case 0xd7: skip = 9; break;
      case 0xd8: skip = 17; break;
      case 0xdc: lenbytes = 2; container = 1; break;        /* array16 */
      case 0xdd: lenbytes = 4; container = 1; break;        /* array32 */
      case 0xde: lenbytes = 2; container = 2; break;        /* map16 */
      case 0xdf: lenbytes = 4; container = 2; break;        /* map32 */
      default: return -1;                                   /* 0xc1: never used */
      }
    }
    if (lenbytes) {
      if (n - i < (size_t)lenbytes) return 1;
      uint64_t len = 0;
      for (int b = 0; b < lenbytes; b++) len = (len << 8) | p[i + (size_t)b]; /* big-endian */
      i += (size_t)lenbytes;
      if (container) items = container == 2 ? 2 * len : len;
      else skip += len;
    }
    if (container) {
      if (items > n - i) return 1; /* every element needs at least one byte */
      if (depth + 1 >= 33) return -1;
      pending[++depth] = items;
      continue;
    }
    if (skip > n - i) return 1;
    i += (size_t)skip;
  }
  return 0;
}

hsad_status_t co_metadata_decode(const char *name, const uint8_t *desc, size_t size,
                                 uint32_t version, hsad_codeobj_t *co) {
  co_md_t md = {.name = name, .co = co, .kernel = "?"};
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  hsad_status_t st = HSAD_OK;
  int guard = co_msgpack_bounds_ok(desc, size);
  msgpack_unpack_return r = guard == 0   ? msgpack_unpack_next(&u, (const char *)desc, size, &off)
                            : guard > 0 ? MSGPACK_UNPACK_CONTINUE
                                        : MSGPACK_UNPACK_PARSE_ERROR;
  if (r != MSGPACK_UNPACK_SUCCESS) {
    st = hsad_fail(HSAD_ERR_BAD_METADATA,
                   "%s: NT_AMDGPU_METADATA note (%zu bytes): msgpack does not decode (%s)", name,
                   size,
                   r == MSGPACK_UNPACK_CONTINUE ? "data ends inside an object"
                   : r == MSGPACK_UNPACK_NOMEM_ERROR ? "out of memory"
                                                     : "parse error");
    goto out;
  }
  const msgpack_object *root = &u.data;
  if (root->type != MSGPACK_OBJECT_MAP) {
    st = hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: metadata root is a %s, expected a map", name,
                   co_type_name(root->type));
    goto out;
  }
  const msgpack_object *kernels = NULL;
  for (uint32_t i = 0; i < root->via.map.size; i++) {
    const msgpack_object *k = &root->via.map.ptr[i].key, *v = &root->via.map.ptr[i].val;
    if (co_key_is(k, "amdhsa.kernels")) {
      if (v->type != MSGPACK_OBJECT_ARRAY) {
        st = hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.kernels is a %s, expected an array",
                       name, co_type_name(v->type));
        goto out;
      }
      kernels = v;
    } else if (co_key_is(k, "amdhsa.target")) {
      if (v->type != MSGPACK_OBJECT_STR) {
        st = hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.target is a %s, expected a string",
                       name, co_type_name(v->type));
        goto out;
      }
      co->info.target = co_arena_strndup(&co->arena, v->via.str.ptr, v->via.str.size);
      if (!co->info.target) {
        st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
        goto out;
      }
    } else if (co_key_is(k, "amdhsa.version")) {
      md.kernel = "-";
      if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size != 2 ||
          v->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
          v->via.array.ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        st = hsad_fail(HSAD_ERR_METADATA_TYPE,
                       "%s: amdhsa.version is not an array of 2 unsigned integers", name);
        goto out;
      }
      co->info.amdhsa_version[0] = (uint32_t)v->via.array.ptr[0].via.u64;
      co->info.amdhsa_version[1] = (uint32_t)v->via.array.ptr[1].via.u64;
    }
  }
  if (!co->info.target && version >= 4) {
    st = hsad_fail(HSAD_ERR_METADATA_TYPE,
                   "%s: amdhsa.target is missing (required in code object v%u)", name, version);
    goto out;
  }
  if (!kernels) { /* a code object without kernels (e.g. only device functions) */
    co->info.kernel_count = 0;
    goto out;
  }
  uint32_t n = kernels->via.array.size;
  co->kernels = co_arena_alloc(&co->arena, (size_t)(n ? n : 1) * sizeof *co->kernels);
  if (!co->kernels) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    goto out;
  }
  for (uint32_t i = 0; i < n; i++) {
    co->kernels[i].owner = co;
    st = co_decode_kernel(&md, i, &kernels->via.array.ptr[i], &co->kernels[i].info);
    if (st) goto out;
  }
  co->info.kernel_count = n;
out:
  msgpack_unpacked_destroy(&u);
  return st;
}
