/* test_codeobj_kernarg.c - the kernarg builder writes exactly the bytes the metadata declares:
 * explicit arguments at their offsets, hidden arguments field by field (v4 and v5, compiler-made
 * and hand-written partial/unaligned blocks), dynamic LDS offsets, zero everywhere else, nothing
 * past kernarg_segment_size; and each bad call has its own error and message. */
#include "test_codeobj_util.h"

#include <time.h>

#define PAD 32 /* bytes after the segment that must stay untouched */

typedef struct {
  _Alignas(64) uint8_t b[512 + PAD];
} kbuf_t;

static void put(uint8_t *exp, uint32_t off, uint64_t v, uint32_t size) {
  for (uint32_t i = 0; i < size; i++) exp[off + i] = (uint8_t)(v >> (8 * i));
}

static void assert_bytes(const uint8_t *got, const uint8_t *exp, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(got[i], exp[i], "kernarg byte %u: got 0x%02x, want 0x%02x", i, got[i], exp[i]);
  for (uint32_t i = n; i < n + PAD; i++)
    cr_assert_eq(got[i], 0xAA, "byte %u past kernarg_segment_size %u was written", i, n);
}

static hsad_status_t build(const hsad_kernel_t *k, const hsad_karg_t *a, uint32_t n,
                           const hsad_dispatch_dims_t *d, const hsad_kernarg_runtime_t *rt,
                           kbuf_t *kb, uint32_t *group) {
  memset(kb->b, 0xAA, sizeof kb->b);
  return hsad_kernarg_build(k, a, n, d, rt, kb->b, sizeof kb->b, group);
}

Test(codeobj_kernarg, vadd_v5_exact_bytes) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "vadd");
  const hsad_kernarg_plan_t *p = hsad_kernel_kernarg_plan(k);
  cr_assert_eq(p->segment_size, 288);
  cr_assert_eq(p->segment_align, 16);
  cr_assert_eq(p->explicit_count, 4);
  cr_assert_eq(p->hidden_count, 13);
  int n = 1000;
  hsad_karg_t args[4] = {HSAD_KARG_PTR(0x1000), HSAD_KARG_PTR(0x2000), HSAD_KARG_PTR(0x3000),
                         HSAD_KARG_VAL(n)};
  hsad_dispatch_dims_t d = {.grid_size = {1000, 1, 1}, .workgroup_size = {256, 1, 1}, .dims = 1,
                            .global_offset = {5, 6, 7}};
  kbuf_t kb;
  uint32_t group = 99;
  cr_assert_eq(build(k, args, 4, &d, NULL, &kb, &group), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[288] = {0};
  put(exp, 0, 0x1000, 8);
  put(exp, 8, 0x2000, 8);
  put(exp, 16, 0x3000, 8);
  put(exp, 24, 1000, 4);
  put(exp, 32, 3, 4);   /* hidden_block_count_x = 1000 / 256 */
  put(exp, 36, 1, 4);   /* y */
  put(exp, 40, 1, 4);   /* z */
  put(exp, 44, 256, 2); /* hidden_group_size_x */
  put(exp, 46, 1, 2);
  put(exp, 48, 1, 2);
  put(exp, 50, 232, 2); /* hidden_remainder_x = 1000 % 256 */
  put(exp, 72, 5, 8);   /* hidden_global_offset_x/y/z */
  put(exp, 80, 6, 8);
  put(exp, 88, 7, 8);
  put(exp, 96, 1, 2);   /* hidden_grid_dims */
  assert_bytes(kb.b, exp, 288);
  cr_assert_eq(group, 0);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, implicit_v4_compiler_hidden_block) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx906-v4.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "implicit");
  uint32_t n = 5;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(0xdead0000ull), HSAD_KARG_VAL(n)};
  hsad_dispatch_dims_t d = {.grid_size = {64, 1, 1}, .workgroup_size = {64, 1, 1}, .dims = 1,
                            .global_offset = {0x11, 0x22, 0x33}};
  hsad_kernarg_runtime_t rt = {.hostcall_buffer = 0x4000, .multigrid_sync_arg = 0x5000,
                               .printf_buffer = 0x6000, .queue_ptr = 0x7000};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 2, &d, &rt, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[72] = {0};
  put(exp, 0, 0xdead0000ull, 8);
  put(exp, 8, 5, 4);
  put(exp, 16, 0x11, 8); /* hidden_global_offset_x */
  put(exp, 24, 0x22, 8);
  put(exp, 32, 0x33, 8);
  put(exp, 40, 0x4000, 8); /* hidden_hostcall_buffer; 48 and 56 hidden_none stay 0 */
  put(exp, 64, 0x5000, 8); /* hidden_multigrid_sync_arg */
  assert_bytes(kb.b, exp, 72);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, implicit_v5_3d) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "implicit");
  uint32_t n = 5;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(0xabcdef012345ull), HSAD_KARG_VAL(n)};
  hsad_dispatch_dims_t d = {.grid_size = {100, 70, 9}, .workgroup_size = {16, 8, 4}, .dims = 3};
  hsad_kernarg_runtime_t rt = {.hostcall_buffer = 0x4000, .multigrid_sync_arg = 0x5000,
                               .heap_v1 = 0x8000, .queue_ptr = 0x7fff00001000ull};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 2, &d, &rt, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[272] = {0};
  put(exp, 0, 0xabcdef012345ull, 8);
  put(exp, 8, 5, 4);
  put(exp, 16, 6, 4); /* 100/16 */
  put(exp, 20, 8, 4); /* 70/8 */
  put(exp, 24, 2, 4); /* 9/4 */
  put(exp, 28, 16, 2);
  put(exp, 30, 8, 2);
  put(exp, 32, 4, 2);
  put(exp, 34, 4, 2); /* 100%16 */
  put(exp, 36, 6, 2); /* 70%8 */
  put(exp, 38, 1, 2); /* 9%4 */
  put(exp, 80, 3, 2); /* grid dims; global offsets 56..79 are 0 */
  put(exp, 96, 0x4000, 8);
  put(exp, 104, 0x5000, 8);
  put(exp, 112, 0x8000, 8);
  put(exp, 216, 0x7fff00001000ull, 8);
  assert_bytes(kb.b, exp, 272);
  hsad_codeobj_destroy(co);
}

/* Hand-written partial, unaligned hidden block: only what the note declares is written. */
Test(codeobj_kernarg, handwritten_partial_unaligned_v5) {
  hsad_codeobj_t *co = co_test_load(FIX("handwritten-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "hw_partial");
  hsad_karg_t args[1] = {HSAD_KARG_PTR(0x1122334455667788ull)};
  hsad_dispatch_dims_t d = {.grid_size = {1000, 1, 1}, .workgroup_size = {64, 1, 1}, .dims = 1};
  hsad_kernarg_runtime_t rt = {.private_base = 0x10000, .shared_base = 0x20000,
                               .queue_ptr = 0x30000, .heap_v1 = 0x40000,
                               .default_queue = 0x50000, .completion_action = 0x60000,
                               .printf_buffer = 0x70000};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 1, &d, &rt, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[80] = {0};
  put(exp, 0, 0x1122334455667788ull, 8);
  put(exp, 10, 64, 2);  /* hidden_group_size_x */
  put(exp, 13, 15, 4);  /* hidden_block_count_x at an odd offset: 1000 / 64 */
  put(exp, 24, 0x10000, 4);
  put(exp, 28, 0x20000, 4);
  put(exp, 32, 0x30000, 8);
  put(exp, 40, 0x40000, 8);
  put(exp, 48, 0x50000, 8);
  put(exp, 56, 0x60000, 8);
  put(exp, 64, 0x70000, 8);
  put(exp, 72, 40, 2);  /* remainder 1000 % 64 */
  put(exp, 74, 1, 2);
  assert_bytes(kb.b, exp, 80);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, handwritten_v4_every_hidden_kind) {
  hsad_codeobj_t *co = co_test_load(FIX("handwritten-v4.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "hw_v4");
  int32_t v = -2;
  hsad_karg_t args[1] = {HSAD_KARG_VAL(v)};
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1,
                            .global_offset = {1, 2, 3}};
  hsad_kernarg_runtime_t rt = {.printf_buffer = 0xa0, .default_queue = 0xb0,
                               .completion_action = 0xc0, .multigrid_sync_arg = 0xd0,
                               .hostcall_buffer = 0xe0};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 1, &d, &rt, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[80] = {0};
  put(exp, 0, 0xfffffffeu, 4);
  put(exp, 8, 1, 8);
  put(exp, 16, 2, 8);
  put(exp, 24, 3, 8);
  put(exp, 32, 0xa0, 8);
  put(exp, 40, 0xb0, 8);
  put(exp, 48, 0xc0, 8);
  put(exp, 64, 0xd0, 8); /* 56: hidden_none stays 0 */
  put(exp, 72, 0xe0, 8);
  assert_bytes(kb.b, exp, 80);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, no_hidden_and_no_args) {
  hsad_codeobj_t *co = co_test_load(FIX("handwritten-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "hw_nohidden");
  cr_assert_eq(hsad_kernel_kernarg_plan(k)->hidden_count, 0);
  int32_t v = 0x01020304;
  hsad_karg_t args[1] = {HSAD_KARG_VAL(v)};
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 1, &d, NULL, &kb, NULL), HSAD_OK);
  uint8_t exp[4] = {4, 3, 2, 1};
  assert_bytes(kb.b, exp, 4);
  hsad_codeobj_destroy(co);

  co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  k = co_test_kernel(co, "noargs");
  cr_assert_eq(hsad_kernel_kernarg_plan(k)->segment_size, 0);
  uint32_t group = 7;
  cr_assert_eq(hsad_kernarg_build(k, NULL, 0, &d, NULL, NULL, 0, &group), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(group, 0);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, dynamic_lds_offsets_and_group_size) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "lds2");
  const hsad_kernarg_plan_t *p = hsad_kernel_kernarg_plan(k);
  cr_assert(p->has_dynamic_lds);
  cr_assert_eq(p->explicit_args[1].align, 4);
  cr_assert_eq(p->explicit_args[3].align, 8);
  char c = 'x';
  float v4[4] = {1, 2, 3, 4};
  hsad_karg_t args[5] = {HSAD_KARG_PTR(0x9000), HSAD_KARG_LDS_BYTES(100), HSAD_KARG_VAL(c),
                         HSAD_KARG_LDS_BYTES(64), HSAD_KARG_VAL(v4)};
  hsad_dispatch_dims_t d = {.grid_size = {256, 1, 1}, .workgroup_size = {256, 1, 1}, .dims = 1};
  kbuf_t kb;
  uint32_t group = 0;
  cr_assert_eq(build(k, args, 5, &d, NULL, &kb, &group), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[48] = {0};
  put(exp, 0, 0x9000, 8);
  put(exp, 8, 0, 4);    /* first LDS pointer at the fixed size 0 */
  exp[12] = 'x';
  put(exp, 16, 104, 4); /* 100 rounded up to the double's 8-byte alignment */
  memcpy(exp + 32, v4, 16);
  assert_bytes(kb.b, exp, 48);
  cr_assert_eq(group, 168);
  hsad_codeobj_destroy(co);

  k = NULL;
  co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  k = co_test_kernel(co, "fixed_lds");
  int64_t kk = 1;
  int16_t s = 2;
  uint8_t u = 3;
  hsad_karg_t a2[4] = {HSAD_KARG_PTR(0x10), HSAD_KARG_VAL(kk), HSAD_KARG_VAL(s), HSAD_KARG_VAL(u)};
  cr_assert_eq(build(k, a2, 4, &d, NULL, &kb, &group), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(group, 512); /* .group_segment_fixed_size */
  hsad_codeobj_destroy(co);
}

/* hidden_dynamic_lds_size (LLVM 17+) declared by rewriting lds2's char argument into it: the
 * builder writes the dynamic bytes, and a 1-byte slot too small for them is an error. */
static int to_dyn_lds(const char *path, const msgpack_object *o, msgpack_packer *pk, void *ctx) {
  (void)o, (void)ctx;
  if (strcmp(path, "amdhsa.kernels/1/.args/2/.value_kind")) return 0;
  msgpack_pack_str(pk, 23);
  msgpack_pack_str_body(pk, "hidden_dynamic_lds_size", 23);
  return 1;
}

Test(codeobj_kernarg, hidden_dynamic_lds_size) {
  co_test_editor_t ed = {to_dyn_lds, NULL, NULL};
  size_t size;
  void *img = co_test_rewrite(FIX("kernels-gfx90a-v5.hsaco"), &ed, &size);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(img, size, "dyn.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(img);
  const hsad_kernel_t *k = co_test_kernel(co, "lds2");
  cr_assert_eq(hsad_kernel_kernarg_plan(k)->explicit_count, 4);
  float v4[4] = {0};
  hsad_karg_t args[4] = {HSAD_KARG_PTR(0), HSAD_KARG_LDS_BYTES(100), HSAD_KARG_LDS_BYTES(64),
                         HSAD_KARG_VAL(v4)};
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  uint32_t group;
  cr_assert_eq(build(k, args, 4, &d, NULL, &kb, &group), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(kb.b[12], 168);
  args[2] = HSAD_KARG_LDS_BYTES(300);
  cr_assert_eq(build(k, args, 4, &d, NULL, &kb, &group), HSAD_ERR_ARG_VALUE);
  cr_assert_str_eq(hsad_last_error(),
                   "dyn.hsaco: kernel 'lds2': hidden argument hidden_dynamic_lds_size = 404 does "
                   "not fit its declared .size 1 at .offset 12");
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, errors_with_messages) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "vadd");
  int n = 1;
  int64_t wide = 1;
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  hsad_karg_t a[4] = {HSAD_KARG_PTR(1), HSAD_KARG_PTR(2), HSAD_KARG_PTR(3), HSAD_KARG_VAL(n)};
  const char *file = FIX("kernels-gfx90a-v5.hsaco");
  char want[512];

  cr_assert_eq(build(k, a, 3, &d, NULL, &kb, NULL), HSAD_ERR_ARG_COUNT);
  snprintf(want, sizeof want, "%s: kernel 'vadd' takes 4 explicit arguments, got 3", file);
  cr_assert_str_eq(hsad_last_error(), want);

  a[3] = HSAD_KARG_VAL(wide);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_SIZE);
  snprintf(want, sizeof want,
           "%s: kernel 'vadd': argument 3 has .size 4, value has 8 bytes", file);
  cr_assert_str_eq(hsad_last_error(), want);

  a[3] = HSAD_KARG_LDS_BYTES(16);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want,
           "%s: kernel 'vadd': argument 3 is by_value, an LDS size needs a "
           "dynamic_shared_pointer", file);
  cr_assert_str_eq(hsad_last_error(), want);

  a[3] = HSAD_KARG_PTR(5);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want,
           "%s: kernel 'vadd': argument 3 is by_value, a pointer value needs "
           "global_buffer, image, sampler, pipe or queue", file);
  cr_assert_str_eq(hsad_last_error(), want);

  a[3] = (hsad_karg_t){.tag = (hsad_karg_tag_t)9};
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);

  a[3] = HSAD_KARG_VAL(n);
  cr_assert_eq(hsad_kernarg_build(k, a, 4, &d, NULL, kb.b, 287, NULL), HSAD_ERR_RESOURCE_EXHAUSTED);
  snprintf(want, sizeof want,
           "%s: kernel 'vadd': kernarg buffer of 287 bytes, .kernarg_segment_size is 288", file);
  cr_assert_str_eq(hsad_last_error(), want);

  cr_assert_eq(hsad_kernarg_build(k, a, 4, &d, NULL, kb.b + 8, 400, NULL),
               HSAD_ERR_INVALID_ARGUMENT);
  cr_assert(strstr(hsad_last_error(), "is not 16-byte aligned"));

  hsad_dispatch_dims_t bad = d;
  bad.dims = 4;
  cr_assert_eq(build(k, a, 4, &bad, NULL, &kb, NULL), HSAD_ERR_INVALID_ARGUMENT);
  snprintf(want, sizeof want, "%s: kernel 'vadd': dims 4, expected 1..3", file);
  cr_assert_str_eq(hsad_last_error(), want);
  bad = d;
  bad.grid_size[1] = 0;
  cr_assert_eq(build(k, a, 4, &bad, NULL, &kb, NULL), HSAD_ERR_INVALID_ARGUMENT);
  snprintf(want, sizeof want,
           "%s: kernel 'vadd': grid_size[1] = 0, workgroup_size[1] = 1: each must be >= 1 (1 "
           "for unused dimensions)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  cr_assert_eq(hsad_kernarg_build(NULL, a, 4, &d, NULL, kb.b, 400, NULL),
               HSAD_ERR_INVALID_ARGUMENT);

  /* BYTES for a dynamic_shared_pointer */
  const hsad_kernel_t *l = co_test_kernel(co, "lds2");
  uint32_t off = 0;
  char c = 0;
  float v4[4];
  hsad_karg_t la[5] = {HSAD_KARG_PTR(0), HSAD_KARG_VAL(off), HSAD_KARG_VAL(c),
                       HSAD_KARG_LDS_BYTES(4), HSAD_KARG_VAL(v4)};
  cr_assert_eq(build(l, la, 5, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want,
           "%s: kernel 'lds2': argument 1 is a dynamic_shared_pointer: pass "
           "HSAD_KARG_LDS_BYTES(n), not bytes", file);
  cr_assert_str_eq(hsad_last_error(), want);
  la[1] = HSAD_KARG_LDS_BYTES(0xfffffff0u);
  la[3] = HSAD_KARG_LDS_BYTES(0x100);
  cr_assert_eq(build(l, la, 5, &d, NULL, &kb, NULL), HSAD_ERR_ARG_VALUE);
  cr_assert(strstr(hsad_last_error(), "group segment reaches 4294967536 bytes, above 4 GiB"),
            "%s", hsad_last_error());
  hsad_codeobj_destroy(co);

  /* a hidden value that does not fit its declared size */
  co = co_test_load(FIX("handwritten-v5.hsaco"));
  k = co_test_kernel(co, "hw_narrow");
  int32_t x = 0;
  hsad_karg_t na[1] = {HSAD_KARG_VAL(x)};
  hsad_dispatch_dims_t big = {.grid_size = {1u << 24, 1, 1}, .workgroup_size = {1, 1, 1},
                              .dims = 1};
  cr_assert_eq(build(k, na, 1, &big, NULL, &kb, NULL), HSAD_ERR_ARG_VALUE);
  snprintf(want, sizeof want,
           "%s: kernel 'hw_narrow': hidden argument hidden_block_count_x = 16777216 does not fit "
           "its declared .size 2 at .offset 0", FIX("handwritten-v5.hsaco"));
  cr_assert_str_eq(hsad_last_error(), want);
  hsad_codeobj_destroy(co);
}

/* A 4-byte pointer slot (32-bit address space) refuses a pointer above 4 GiB. */
static int narrow_ptr(const char *path, const msgpack_object *o, msgpack_packer *pk, void *ctx) {
  (void)o, (void)ctx;
  if (strcmp(path, "amdhsa.kernels/0/.args/0/.size")) return 0;
  msgpack_pack_uint32(pk, 4);
  return 1;
}

Test(codeobj_kernarg, pointer_does_not_fit) {
  co_test_editor_t ed = {narrow_ptr, NULL, NULL};
  size_t size;
  void *img = co_test_rewrite(FIX("kernels-gfx90a-v5.hsaco"), &ed, &size);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(img, size, "p32.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(img);
  const hsad_kernel_t *k = co_test_kernel(co, "vadd");
  int n = 0;
  hsad_karg_t a[4] = {HSAD_KARG_PTR(0x100000000ull), HSAD_KARG_PTR(0), HSAD_KARG_PTR(0),
                      HSAD_KARG_VAL(n)};
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_VALUE);
  cr_assert_str_eq(hsad_last_error(), "p32.hsaco: kernel 'vadd': argument 0: pointer "
                                      "0x100000000 does not fit its 4-byte slot");
  a[0] = HSAD_KARG_PTR(0xfffffff0u);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_OK);
  cr_assert_eq(kb.b[0], 0xf0);
  cr_assert_eq(kb.b[3], 0xff);
  cr_assert_eq(kb.b[4], 0);
  hsad_codeobj_destroy(co);
}

Test(codeobj_kernarg, lookup_by_name_and_symbol) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *a = co_test_kernel(co, "lds2");
  const hsad_kernel_t *b = co_test_kernel(co, "lds2.kd");
  cr_assert_eq(a, b);
  cr_assert_eq(a, hsad_codeobj_kernel_at(co, 1));
  cr_assert_null(hsad_codeobj_kernel_at(co, 8));
  hsad_codeobj_destroy(co);
}

/* The header's thread-safety contract: loads on many threads at once, and many threads looking
 * up and building kernargs from one shared code object, give the single-threaded bytes. */
#include <pthread.h>

static hsad_codeobj_t *g_shared;
static uint8_t g_expected[288];

static void *worker(void *arg) {
  uintptr_t fail = 0;
  for (int r = 0; r < 50; r++) {
    hsad_codeobj_t *own = NULL;
    if (hsad_codeobj_load_file(FIX("kernels-gfx90a-v5.hsaco"), NULL, &own) != HSAD_OK) fail++;
    hsad_codeobj_destroy(own);
    const hsad_kernel_t *k = NULL;
    if (hsad_codeobj_kernel_find(g_shared, "vadd", &k) != HSAD_OK) fail++;
    int n = 1000;
    hsad_karg_t a[4] = {HSAD_KARG_PTR(0x1000), HSAD_KARG_PTR(0x2000), HSAD_KARG_PTR(0x3000),
                        HSAD_KARG_VAL(n)};
    hsad_dispatch_dims_t d = {.grid_size = {1000, 1, 1}, .workgroup_size = {256, 1, 1},
                              .dims = 1};
    _Alignas(64) uint8_t buf[288];
    if (hsad_kernarg_build(k, a, 4, &d, NULL, buf, sizeof buf, NULL) != HSAD_OK) fail++;
    if (memcmp(buf, g_expected, sizeof buf)) fail++;
    /* a failing call on this thread must not disturb another thread's message */
    if (hsad_codeobj_kernel_find(g_shared, "missing", &k) != HSAD_ERR_KERNEL_NOT_FOUND ||
        !strstr(hsad_last_error(), "'missing'"))
      fail++;
  }
  (void)arg;
  return (void *)fail;
}

Test(codeobj_kernarg, concurrent_loads_and_builds) {
  g_shared = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(g_shared, "vadd");
  int n = 1000;
  hsad_karg_t a[4] = {HSAD_KARG_PTR(0x1000), HSAD_KARG_PTR(0x2000), HSAD_KARG_PTR(0x3000),
                      HSAD_KARG_VAL(n)};
  hsad_dispatch_dims_t d = {.grid_size = {1000, 1, 1}, .workgroup_size = {256, 1, 1}, .dims = 1};
  _Alignas(64) uint8_t buf[288];
  cr_assert_eq(hsad_kernarg_build(k, a, 4, &d, NULL, buf, sizeof buf, NULL), HSAD_OK);
  memcpy(g_expected, buf, sizeof buf);
  pthread_t t[8];
  for (int i = 0; i < 8; i++) cr_assert_eq(pthread_create(&t[i], NULL, worker, NULL), 0);
  for (int i = 0; i < 8; i++) {
    void *fails;
    pthread_join(t[i], &fails);
    cr_assert_eq((uintptr_t)fails, 0, "thread %d: %lu failures", i, (unsigned long)(uintptr_t)fails);
  }
  hsad_codeobj_destroy(g_shared);
}

/* Issue 10: a partial hidden block (amdgpu-implicitarg-num-bytes=24). The note lists global
 * offsets (56, 64, 72) and grid dims (80) past the 40-byte segment: the load succeeds, those
 * four are absent, and the builder writes block counts, group sizes and remainders only,
 * nothing past byte 40 (the PAD bytes after it stay 0xAA). */
Test(codeobj_kernarg, partial_hidden_block_past_segment) {
  hsad_codeobj_t *co = co_test_load(FIX("partial-hidden-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "hw_implicit24");
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  cr_assert_eq(ki->kernarg_segment_size, 40);
  cr_assert_eq(ki->arg_count, 11);
  cr_assert_eq(ki->hidden_args_beyond_segment, 4);
  cr_assert_eq(ki->args[10].value_kind, HSAD_VK_HIDDEN_REMAINDER_Z);
  cr_assert_eq(ki->args[10].offset, 38);
  const hsad_kernarg_plan_t *p = hsad_kernel_kernarg_plan(k);
  cr_assert_eq(p->segment_size, 40);
  cr_assert_eq(p->explicit_count, 2);
  cr_assert_eq(p->hidden_count, 9);
  int32_t count = 1000;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(0x123456789abcull), HSAD_KARG_VAL(count)};
  hsad_dispatch_dims_t d = {.grid_size = {1000, 6, 1}, .workgroup_size = {64, 4, 1}, .dims = 2,
                            .global_offset = {7, 8, 9}};
  kbuf_t kb;
  cr_assert_eq(build(k, args, 2, &d, NULL, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[40] = {0};
  put(exp, 0, 0x123456789abcull, 8);
  put(exp, 8, 1000, 4);
  put(exp, 16, 15, 4); /* block counts: 1000 / 64, 6 / 4, 1 */
  put(exp, 20, 1, 4);
  put(exp, 24, 1, 4);
  put(exp, 28, 64, 2); /* group sizes */
  put(exp, 30, 4, 2);
  put(exp, 32, 1, 2);
  put(exp, 34, 40, 2); /* remainders: 1000 % 64, 6 % 4, 0 */
  put(exp, 36, 2, 2);
  put(exp, 38, 0, 2);
  assert_bytes(kb.b, exp, 40);
  /* a buffer of exactly the segment is enough: nothing is written past it */
  _Alignas(64) uint8_t exact[40];
  cr_assert_eq(hsad_kernarg_build(k, args, 2, &d, NULL, exact, sizeof exact, NULL), HSAD_OK);
  cr_assert_eq(memcmp(exact, exp, 40), 0);
  hsad_codeobj_destroy(co);
}

/* Issue 21: typed values against the parameter's type from .type_name (OpenCL C). vadd's n is
 * an `int`: a float (literal, lvalue, or a SCALAR value) refused with both types named, integers
 * of either signedness accepted and written exactly; untyped bytes checked by size only (the
 * float's bits pass, as before); a typed value whose size is not its type's, a SCALAR without
 * a type, an unknown type and a typed pointer refused. fixed_lds's long: an f64 refused, an
 * i64 written; lds2's char: HSAD_KARG_VAL of a char is an i8. */
Test(codeobj_kernarg, typed_values_against_type_name) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "vadd");
  const char *file = FIX("kernels-gfx90a-v5.hsaco");
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  char want[512];
  float fv = 2.5f;
  hsad_karg_t a[4] = {HSAD_KARG_PTR(1), HSAD_KARG_PTR(2), HSAD_KARG_PTR(3), HSAD_KARG_F32(2.5f)};
  cr_assert_eq(a[3].tag, HSAD_KARG_BYTES);
  cr_assert_eq(a[3].type, HSAD_KARG_TYPE_F32);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel 'vadd': argument 3 is int (integer), the value given "
           "is f32 (floating-point)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[3] = HSAD_KARG_VAL(fv);
  cr_assert_eq(a[3].type, HSAD_KARG_TYPE_F32);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  cr_assert_str_eq(hsad_last_error(), want);
  a[3] = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_F32, .size = 4,
                       .scalar = 0x40200000};
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  cr_assert_str_eq(hsad_last_error(), want);

  /* integers: u32 for int (signedness is not checked), i32, an int lvalue, a SCALAR */
  uint8_t exp[288];
  struct {
    hsad_karg_t v;
    uint32_t bits;
  } ok[] = {{HSAD_KARG_U32(4000000000u), 4000000000u}, {HSAD_KARG_I32(-3), 0xfffffffdu},
            {(hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_I32, .size = 4,
                           .scalar = 0x11223344},
             0x11223344u},
            {(hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 4, .bytes = &fv}, 0x40200000u}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    a[3] = ok[i].v;
    cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_OK, "value %zu: %s", i,
                 hsad_last_error());
    memset(exp, 0, sizeof exp);
    put(exp, 0, 1, 8);
    put(exp, 8, 2, 8);
    put(exp, 16, 3, 8);
    put(exp, 24, ok[i].bits, 4);
    cr_assert_eq(memcmp(kb.b, exp, 28), 0, "value %zu: explicit bytes", i);
    cr_assert_eq(kb.b[288], 0xAA);
  }
  int n = 5;
  a[3] = HSAD_KARG_VAL(n);
  cr_assert_eq(a[3].type, HSAD_KARG_TYPE_I32);
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint32_t got;
  memcpy(&got, kb.b + 24, 4);
  cr_assert_eq(got, 5);

  int64_t wide = 1;
  a[3] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = HSAD_KARG_TYPE_I64, .size = 4,
                       .bytes = &wide};
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_SIZE);
  snprintf(want, sizeof want, "%s: kernel 'vadd': argument 3: a value of type i64 has 8 bytes, "
           "its size says 4", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[3] = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .size = 4, .scalar = 1};
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel 'vadd': argument 3: a SCALAR value needs a type 0 "
           "(hsad_karg_type_t: 1 to 10)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[3] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = 11, .size = 4, .bytes = &n};
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel 'vadd': argument 3: unknown type 11 "
           "(hsad_karg_type_t: 1 to 10)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[3] = HSAD_KARG_VAL(n);
  a[1].type = HSAD_KARG_TYPE_U64;
  cr_assert_eq(build(k, a, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel 'vadd': argument 1: a pointer value with type 8 (a "
           "type is for HSAD_KARG_BYTES and HSAD_KARG_SCALAR only; 0 here)", file);
  cr_assert_str_eq(hsad_last_error(), want);

  /* fixed_lds(global int *o, long l, short s, uchar u): an f64 for the long refused */
  const hsad_kernel_t *fl = co_test_kernel(co, "fixed_lds");
  double dv = 1.0;
  short sv = -2;
  unsigned char uv = 200;
  hsad_karg_t b[4] = {HSAD_KARG_PTR(8), HSAD_KARG_VAL(dv), HSAD_KARG_VAL(sv), HSAD_KARG_VAL(uv)};
  cr_assert_eq(build(fl, b, 4, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel 'fixed_lds': argument 1 is long (integer), the value "
           "given is f64 (floating-point)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  b[1] = HSAD_KARG_I64(-9);
  cr_assert_eq(build(fl, b, 4, &d, NULL, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  int64_t lgot;
  int16_t sgot;
  memcpy(&lgot, kb.b + 8, 8);
  memcpy(&sgot, kb.b + 16, 2);
  cr_assert_eq(lgot, -9);
  cr_assert_eq(sgot, -2);
  cr_assert_eq(kb.b[18], 200);
  char cv = 'x';
  hsad_karg_t cvk = HSAD_KARG_VAL(cv);
  cr_assert_eq(cvk.type, HSAD_KARG_TYPE_I8);
  cr_assert_eq(cvk.size, 1);
  hsad_codeobj_destroy(co);
}

/* Issue 21: a HIP kernel has no .type_name: the parameter types come from its mangled name,
 * _Z5scalePffi = scale(float*, float, int). An i32 for `float a` and an f32 for `int n` refused
 * naming the demangled types; the right types written exactly (16-byte segment, no hidden
 * arguments). */
Test(codeobj_kernarg, typed_values_against_mangled_name) {
  hsad_codeobj_t *co = co_test_load(FIX("hip_scale-gfx90a.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "_Z5scalePffi");
  const char *file = FIX("hip_scale-gfx90a.hsaco");
  hsad_dispatch_dims_t d = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  kbuf_t kb;
  char want[512];
  hsad_karg_t a[3] = {HSAD_KARG_PTR(0x1000), HSAD_KARG_I32(2), HSAD_KARG_I32(7)};
  cr_assert_eq(build(k, a, 3, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel '_Z5scalePffi': argument 1 is float (floating-point), "
           "the value given is i32 (integer)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[1] = HSAD_KARG_F32(0.5f);
  a[2] = HSAD_KARG_F32(7.0f);
  cr_assert_eq(build(k, a, 3, &d, NULL, &kb, NULL), HSAD_ERR_ARG_KIND);
  snprintf(want, sizeof want, "%s: kernel '_Z5scalePffi': argument 2 is int (integer), the "
           "value given is f32 (floating-point)", file);
  cr_assert_str_eq(hsad_last_error(), want);
  a[2] = HSAD_KARG_U32(7);
  cr_assert_eq(build(k, a, 3, &d, NULL, &kb, NULL), HSAD_OK, "%s", hsad_last_error());
  uint8_t exp[16] = {0};
  put(exp, 0, 0x1000, 8);
  put(exp, 8, 0x3f000000, 4); /* 0.5f */
  put(exp, 12, 7, 4);
  assert_bytes(kb.b, exp, 16);
  hsad_codeobj_destroy(co);
}
