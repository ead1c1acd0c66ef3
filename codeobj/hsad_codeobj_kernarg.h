/* hsad_codeobj_kernarg.h - the kernarg builder: argument values (hsad_karg_t, HSAD_KARG_*), the
 * kernarg plan and hsad_kernarg_build.
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_KERNARG_H
#define HSAD_CODEOBJ_KERNARG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_load.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Kernarg builder                                                                            */

/* One explicit argument value, in .args order (hidden arguments excluded). */
typedef enum hsad_karg_tag {
  HSAD_KARG_BYTES = 0,   /* `bytes`, `size` must equal the argument's .size. Any kind but
                            dynamic_shared_pointer and global_buffer (issue 21: a pointer is
                            HSAD_KARG_POINTER, so an integer is never taken for an address).
                            `type` may name the scalar type of the bytes (below) */
  HSAD_KARG_POINTER = 1, /* `pointer`: global_buffer / image / sampler / pipe / queue; written
                            in .size bytes (8, or 4 for 32-bit address spaces: must fit) */
  HSAD_KARG_LDS = 2,     /* `lds_bytes`: dynamic_shared_pointer; the builder assigns the LDS
                            offset (see hsad_kernarg_build) */
  HSAD_KARG_SCALAR = 3,  /* a typed scalar held in the value itself: `type` (not UNTYPED),
                            `size` its size, `scalar` its bits (the low `size` bytes,
                            little-endian; the others 0). C++'s literal forms (below): a
                            temporary's bytes do not outlive the expression that made them */
} hsad_karg_tag_t;

/* The scalar type of a by-value argument's value (hsad_karg_t.type). The order and the names
 * are hsad run's TYPEs (i8 ... f64). UNTYPED: bytes of no stated type, checked by size only. */
typedef enum hsad_karg_type {
  HSAD_KARG_UNTYPED = 0,
  HSAD_KARG_TYPE_I8, HSAD_KARG_TYPE_U8, HSAD_KARG_TYPE_I16, HSAD_KARG_TYPE_U16,
  HSAD_KARG_TYPE_I32, HSAD_KARG_TYPE_U32, HSAD_KARG_TYPE_I64, HSAD_KARG_TYPE_U64,
  HSAD_KARG_TYPE_F32, HSAD_KARG_TYPE_F64,
  HSAD_KARG_TYPE_COUNT_
} hsad_karg_type_t;

/* 16 bytes: `tag` and `type` share the first 4 (the fast paths compare them as one word).
 * Build values with the constructors below (they zero what a tag does not use); a value
 * filled field by field must set `type` (0: untyped). */
typedef struct hsad_karg {
  uint16_t tag;          /* hsad_karg_tag_t */
  uint16_t type;         /* hsad_karg_type_t: BYTES (optional) and SCALAR (required); 0 for
                            POINTER and LDS */
  uint32_t size;         /* BYTES, SCALAR: bytes of the value; otherwise ignored */
  union {
    const void *bytes;
    uint64_t pointer;
    uint32_t lds_bytes;
    uint64_t scalar;     /* SCALAR: the value's bits */
  };
} hsad_karg_t;

/* The scalar types' names ("i32"; NULL for UNTYPED or out of range), sizes in bytes (0 for
 * UNTYPED) and whether they are floating-point. Thread-safe (tables). */
const char *hsad_karg_type_name(hsad_karg_type_t type);
uint32_t hsad_karg_type_size(hsad_karg_type_t type);
bool hsad_karg_type_is_float(hsad_karg_type_t type);

/* The type check of a by-value argument (hsad_kernarg_build; issue 21). When a value has a
 * type (a typed HSAD_KARG_BYTES or HSAD_KARG_SCALAR) and the kernel's parameter has a known
 * scalar type, a floating-point value for an integer parameter, or an integer value for a
 * floating-point one, is refused (HSAD_ERR_ARG_KIND; the message names the code object, the
 * kernel, the argument's index and name, the parameter's type and the value's). Integers of
 * either signedness are accepted for each other (the size is checked already: an i32 for a
 * `uint`, a u64 for a `long`); so are integers of the element type of a vector parameter of
 * the same size. The parameter's type comes, at load, from:
 *   - the metadata's .type_name (OpenCL C code objects: "int", "uint", "float", "float2");
 *   - else, for a kernel whose name is mangled (Itanium C++ ABI: HIP), the parameter types of
 *     the demangled name (libstdc++'s abi::__cxa_demangle, loaded at run time with dlopen of
 *     libstdc++.so.6; without it the types are unknown);
 *   - else it is unknown, and only the size is checked (as for untyped bytes).
 * hsad run and hsad graph check their arguments with these same classifications first
 * (stricter: a scalar's TYPE must be the parameter's, signedness included). */

/* What a type name, as .type_name spells it ("uint", "const float", "float4", "unsigned
 * int"), says of a by-value argument: a scalar or vector of a known element type (SCALAR:
 * *out_type, *out_width 1 or 2, 3, 4, 8, 16), a struct, union or half that only raw bytes
 * can give (RAW), or a name this does not know (UNKNOWN: a typedef). Thread-safe. */
typedef enum hsad_type_name_class {
  HSAD_TYPE_NAME_UNKNOWN = 0,
  HSAD_TYPE_NAME_SCALAR = 1,
  HSAD_TYPE_NAME_RAW = 2,
} hsad_type_name_class_t;
hsad_type_name_class_t hsad_type_name_classify(const char *type_name, hsad_karg_type_t *out_type,
                                               uint32_t *out_width);

/* A C++ parameter type as a demangler spells it ("float const*", "unsigned int",
 * "HIP_vector_type<float, 4u>") in hsad_type_name_classify's spelling: qualifiers dropped,
 * HIP's vector types as OpenCL's ("float4"), pointers as "POINTEE*". Writes "" into `out`
 * (out_size bytes) for what it cannot express (a pointer to a pointer, a name too long). */
void hsad_cxx_type_class(const char *cxx_type, char *out, size_t out_size);

/* The parameter types of a mangled (Itanium C++ ABI, "_Z...") function name, as the
 * demangler spells them, split at top-level commas into out[0..max-1] (HSAD_CXX_TYPE_MAX
 * bytes each; "" for one too long). Returns the number of parameters (0 for "()" or
 * "(void)"), or -1 when the name does not demangle to a function type or libstdc++'s
 * demangler cannot be loaded. Allocates (the demangler's string); thread-safe. */
#define HSAD_CXX_TYPE_MAX 192
int hsad_cxx_param_types(const char *mangled, char (*out)[HSAD_CXX_TYPE_MAX], int max);

/* Argument constructors: HSAD_KARG_VAL(lvalue) passes the bytes of an lvalue by value (its
 * sizeof is the size checked against .size; they are read when the launch is checked or
 * dispatched, so the lvalue must live until then), HSAD_KARG_PTR(p) a buffer address,
 * HSAD_KARG_LDS_BYTES(n) n bytes of dynamic LDS. C: compound literals (usable in any
 * initializer of automatic storage). C++ has neither compound literals nor (before C++20)
 * designated initializers: the same macros call the inline constructors below, so one spelling
 * serves both.
 * HSAD_KARG_VAL of an lvalue of an arithmetic type (char ... unsigned long long, _Bool/bool,
 * float, double) gives the value its type (`int n; HSAD_KARG_VAL(n)`: i32), so a float given
 * for an integer parameter, or the reverse, is refused (the type check above); C finds the
 * type with _Generic (C11), C++ with a template on the lvalue's type; any other type (a struct,
 * an array) stays untyped bytes.
 * HSAD_KARG_VAL of an lvalue of pointer type (`float *x; HSAD_KARG_VAL(x)`) is a pointer
 * argument (tag HSAD_KARG_POINTER, the pointer's value), as HSAD_KARG_PTR(x) is: bytes
 * (HSAD_KARG_BYTES) given for a global_buffer are refused (HSAD_ERR_ARG_KIND, issue 21: an
 * integer that holds an address is not accepted as a pointer), so the idiom must say it is
 * a pointer. C finds pointer types with GCC/Clang's __builtin_classify_type (an array is
 * not a pointer: it passes its bytes); C++ with a template on the lvalue's type.
 * Literals: HSAD_KARG_I32(x), HSAD_KARG_U32(x), HSAD_KARG_I64(x), HSAD_KARG_U64(x),
 * HSAD_KARG_F32(x), HSAD_KARG_F64(x) pass x converted to int32_t, uint32_t, int64_t, uint64_t,
 * float, double, typed: `HSAD_KARG_F32(2.5f)`, `HSAD_KARG_U32(n * 2)`. C: typed bytes of a
 * compound literal (alive until the end of the enclosing block). C++: HSAD_KARG_SCALAR values
 * (the value is copied into the hsad_karg_t: no lifetime to mind); there HSAD_KARG_VAL of an
 * rvalue of an arithmetic type (`HSAD_KARG_VAL(2.5f)`, `HSAD_KARG_VAL(n + 1)`) is the literal
 * form of its type too. */
/* The 8 bytes of a pointer lvalue at `at`, as an integer (a byte copy: no aliasing). */
static inline uint64_t hsad_karg_pointer_at_(const void *at) {
  uint64_t v = 0;
  for (unsigned i = 0; i < sizeof v; i++) ((unsigned char *)&v)[i] = ((const unsigned char *)at)[i];
  return v;
}
#ifdef __cplusplus
static inline hsad_karg_t hsad_karg_bytes_(const void *bytes, uint32_t size, uint16_t type) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_BYTES;
  k.type = type;
  k.size = size;
  k.bytes = bytes;
  return k;
}
static inline hsad_karg_t hsad_karg_pointer_(uint64_t address) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_POINTER;
  k.type = HSAD_KARG_UNTYPED;
  k.size = 8;
  k.pointer = address;
  return k;
}
static inline hsad_karg_t hsad_karg_lds_(uint32_t bytes) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_LDS;
  k.type = HSAD_KARG_UNTYPED;
  k.size = 0;
  k.pointer = 0;
  k.lds_bytes = bytes;
  return k;
}
/* A SCALAR of `size` (<= 8) bytes at `at`, copied. */
static inline hsad_karg_t hsad_karg_scalar_(uint16_t type, uint32_t size, const void *at) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_SCALAR;
  k.type = type;
  k.size = size;
  k.scalar = 0;
  for (uint32_t i = 0; i < size; i++)
    ((unsigned char *)&k.scalar)[i] = ((const unsigned char *)at)[i];
  return k;
}
}
extern "C++" {
template <typename T> struct hsad_karg_is_pointer_ { enum { value = 0 }; };
template <typename T> struct hsad_karg_is_pointer_<T *> { enum { value = 1 }; };
template <typename T> struct hsad_karg_type_of_ { enum { value = HSAD_KARG_UNTYPED }; };
#define HSAD_KARG_TYPE_OF_CXX_(T, code)                                                       \
  template <> struct hsad_karg_type_of_<T> { enum { value = code }; };                        \
  static inline hsad_karg_t hsad_karg_val_(T &&v) {                                           \
    return hsad_karg_scalar_((uint16_t)(code), (uint32_t)sizeof(T), &v);                      \
  }
HSAD_KARG_TYPE_OF_CXX_(char, HSAD_KARG_TYPE_I8)
HSAD_KARG_TYPE_OF_CXX_(signed char, HSAD_KARG_TYPE_I8)
HSAD_KARG_TYPE_OF_CXX_(unsigned char, HSAD_KARG_TYPE_U8)
HSAD_KARG_TYPE_OF_CXX_(bool, HSAD_KARG_TYPE_U8)
HSAD_KARG_TYPE_OF_CXX_(short, HSAD_KARG_TYPE_I16)
HSAD_KARG_TYPE_OF_CXX_(unsigned short, HSAD_KARG_TYPE_U16)
HSAD_KARG_TYPE_OF_CXX_(int, sizeof(int) == 4 ? HSAD_KARG_TYPE_I32 : HSAD_KARG_UNTYPED)
HSAD_KARG_TYPE_OF_CXX_(unsigned, sizeof(int) == 4 ? HSAD_KARG_TYPE_U32 : HSAD_KARG_UNTYPED)
HSAD_KARG_TYPE_OF_CXX_(long, sizeof(long) == 8 ? HSAD_KARG_TYPE_I64 : HSAD_KARG_TYPE_I32)
HSAD_KARG_TYPE_OF_CXX_(unsigned long, sizeof(long) == 8 ? HSAD_KARG_TYPE_U64 : HSAD_KARG_TYPE_U32)
HSAD_KARG_TYPE_OF_CXX_(long long, HSAD_KARG_TYPE_I64)
HSAD_KARG_TYPE_OF_CXX_(unsigned long long, HSAD_KARG_TYPE_U64)
HSAD_KARG_TYPE_OF_CXX_(float, HSAD_KARG_TYPE_F32)
HSAD_KARG_TYPE_OF_CXX_(double, HSAD_KARG_TYPE_F64)
#undef HSAD_KARG_TYPE_OF_CXX_
/* an lvalue (or an rvalue of another type: a struct's bytes, read later) */
template <typename T> static inline hsad_karg_t hsad_karg_val_(const T &v) {
  if (hsad_karg_is_pointer_<T>::value)
    return hsad_karg_pointer_(hsad_karg_pointer_at_(&v));
  return hsad_karg_bytes_(&v, (uint32_t)sizeof v, (uint16_t)hsad_karg_type_of_<T>::value);
}
template <typename T> static inline hsad_karg_t hsad_karg_literal_(uint16_t type, T v) {
  return hsad_karg_scalar_(type, (uint32_t)sizeof v, &v);
}
}
extern "C" {
#define HSAD_KARG_VAL(value) hsad_karg_val_(value)
#define HSAD_KARG_PTR(p) hsad_karg_pointer_((uint64_t)(uintptr_t)(p))
#define HSAD_KARG_LDS_BYTES(n) hsad_karg_lds_((uint32_t)(n))
#define HSAD_KARG_I32(x) hsad_karg_literal_<int32_t>(HSAD_KARG_TYPE_I32, (int32_t)(x))
#define HSAD_KARG_U32(x) hsad_karg_literal_<uint32_t>(HSAD_KARG_TYPE_U32, (uint32_t)(x))
#define HSAD_KARG_I64(x) hsad_karg_literal_<int64_t>(HSAD_KARG_TYPE_I64, (int64_t)(x))
#define HSAD_KARG_U64(x) hsad_karg_literal_<uint64_t>(HSAD_KARG_TYPE_U64, (uint64_t)(x))
#define HSAD_KARG_F32(x) hsad_karg_literal_<float>(HSAD_KARG_TYPE_F32, (float)(x))
#define HSAD_KARG_F64(x) hsad_karg_literal_<double>(HSAD_KARG_TYPE_F64, (double)(x))
#else
#if defined(__GNUC__) || defined(__clang__)
/* 1 for an lvalue of pointer type; 0 for an array (its type differs from its decayed one) */
#define HSAD_KARG_IS_POINTER_(x)                                                              \
  (__builtin_classify_type(x) == 5 /* pointer_type_class */ &&                                \
   __builtin_types_compatible_p(__typeof__(x), __typeof__(((void)0, (x)))))
#else
#define HSAD_KARG_IS_POINTER_(x) 0
#endif
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
/* the hsad_karg_type_t of an lvalue's type (qualifiers dropped; arrays decay: untyped) */
#define HSAD_KARG_TYPE_OF_(x)                                                                 \
  _Generic((x), char: HSAD_KARG_TYPE_I8, signed char: HSAD_KARG_TYPE_I8,                      \
           unsigned char: HSAD_KARG_TYPE_U8, _Bool: HSAD_KARG_TYPE_U8,                        \
           short: HSAD_KARG_TYPE_I16, unsigned short: HSAD_KARG_TYPE_U16,                     \
           int: HSAD_KARG_TYPE_I32, unsigned: HSAD_KARG_TYPE_U32,                             \
           long: sizeof(long) == 8 ? HSAD_KARG_TYPE_I64 : HSAD_KARG_TYPE_I32,                 \
           unsigned long: sizeof(long) == 8 ? HSAD_KARG_TYPE_U64 : HSAD_KARG_TYPE_U32,        \
           long long: HSAD_KARG_TYPE_I64, unsigned long long: HSAD_KARG_TYPE_U64,             \
           float: HSAD_KARG_TYPE_F32, double: HSAD_KARG_TYPE_F64, default: HSAD_KARG_UNTYPED)
#else
#define HSAD_KARG_TYPE_OF_(x) HSAD_KARG_UNTYPED
#endif
/* .pointer and .bytes share their 8 bytes (LP64): the address of the lvalue is stored as the
 * integer .pointer for bytes, so one designator serves both tags */
#define HSAD_KARG_VAL(lvalue)                                                                 \
  ((hsad_karg_t){.tag = HSAD_KARG_IS_POINTER_(lvalue) ? HSAD_KARG_POINTER : HSAD_KARG_BYTES,  \
                 .type = HSAD_KARG_IS_POINTER_(lvalue) ? HSAD_KARG_UNTYPED                    \
                                                       : HSAD_KARG_TYPE_OF_(lvalue),          \
                 .size = HSAD_KARG_IS_POINTER_(lvalue) ? 8u : (uint32_t)sizeof(lvalue),       \
                 .pointer = HSAD_KARG_IS_POINTER_(lvalue)                                     \
                                ? hsad_karg_pointer_at_(&(lvalue))                            \
                                : (uint64_t)(uintptr_t)(const void *)&(lvalue)})
#define HSAD_KARG_SCALAR_(ctype, code, x)                                                     \
  ((hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = (code), .size = sizeof(ctype),               \
                 .bytes = &(const ctype){(ctype)(x)}})
#define HSAD_KARG_I32(x) HSAD_KARG_SCALAR_(int32_t, HSAD_KARG_TYPE_I32, x)
#define HSAD_KARG_U32(x) HSAD_KARG_SCALAR_(uint32_t, HSAD_KARG_TYPE_U32, x)
#define HSAD_KARG_I64(x) HSAD_KARG_SCALAR_(int64_t, HSAD_KARG_TYPE_I64, x)
#define HSAD_KARG_U64(x) HSAD_KARG_SCALAR_(uint64_t, HSAD_KARG_TYPE_U64, x)
#define HSAD_KARG_F32(x) HSAD_KARG_SCALAR_(float, HSAD_KARG_TYPE_F32, x)
#define HSAD_KARG_F64(x) HSAD_KARG_SCALAR_(double, HSAD_KARG_TYPE_F64, x)
#define HSAD_KARG_PTR(p) \
  ((hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 8, .pointer = (uint64_t)(uintptr_t)(p)})
#define HSAD_KARG_LDS_BYTES(n) \
  ((hsad_karg_t){.tag = HSAD_KARG_LDS, .size = 0, .lds_bytes = (n)})
#endif

/* The dispatch geometry the hidden arguments describe (the AQL packet's fields). */
typedef struct hsad_dispatch_dims {
  uint32_t grid_size[3];      /* work-items per dimension, >= 1 (unused dims: 1) */
  uint16_t workgroup_size[3]; /* work-items per dimension, >= 1 */
  uint16_t dims;              /* 1..3 (hidden_grid_dims; the packet's setup dimensions) */
  uint64_t global_offset[3];  /* hidden_global_offset_x/y/z, work-items; usually 0 */
} hsad_dispatch_dims_t;

/* Hidden values only the runtime knows. Zero for any the caller does not provide: the field
 * is then written as 0 (a kernel that dereferences it faults, as with ROCr's defaults). */
typedef struct hsad_kernarg_runtime {
  uint64_t queue_ptr;           /* hidden_queue_ptr: amd_queue_t address */
  uint64_t heap_v1;             /* hidden_heap_v1 */
  uint64_t hostcall_buffer;     /* hidden_hostcall_buffer */
  uint64_t printf_buffer;       /* hidden_printf_buffer */
  uint64_t multigrid_sync_arg;  /* hidden_multigrid_sync_arg */
  uint64_t default_queue;       /* hidden_default_queue */
  uint64_t completion_action;   /* hidden_completion_action */
  uint32_t private_base;        /* hidden_private_base: high 32 bits of the private aperture */
  uint32_t shared_base;         /* hidden_shared_base: high 32 bits of the shared aperture */
} hsad_kernarg_runtime_t;

/* The per-kernel plan, precomputed at load (read-only; for callers that emit their own). */
typedef struct hsad_kernarg_slot {
  uint32_t offset;              /* bytes into the kernarg segment */
  uint32_t size;                /* bytes */
  hsad_value_kind_t kind;
  uint32_t align;               /* dynamic_shared_pointer: LDS alignment (bytes), else 0 */
} hsad_kernarg_slot_t;

typedef struct hsad_kernarg_plan {
  uint32_t segment_size;        /* .kernarg_segment_size, bytes */
  uint32_t segment_align;       /* max(.kernarg_segment_align, 16), bytes */
  uint32_t explicit_count;      /* explicit (non-hidden) arguments */
  const hsad_kernarg_slot_t *explicit_args;
  uint32_t hidden_count;        /* hidden arguments the note declares (incl. hidden_none) */
  const hsad_kernarg_slot_t *hidden_args;
  uint32_t group_segment_fixed_size; /* .group_segment_fixed_size, bytes */
  bool has_dynamic_lds;         /* any dynamic_shared_pointer argument */
} hsad_kernarg_plan_t;

/* The kernel's kernarg plan (explicit slots in .args order, then hidden slots in .args order),
 * built at load; owned by the code object; NULL only for NULL. Thread-safe (read-only). */
const hsad_kernarg_plan_t *hsad_kernel_kernarg_plan(const hsad_kernel_t *kernel);

/* Builds the kernarg segment of one dispatch into `out` (out_size >= .kernarg_segment_size,
 * `out` aligned to at least 16 bytes; 64 recommended). The first kernarg_segment_size bytes are
 * zeroed, explicit arguments copied at their .offset, each hidden argument written field by
 * field, little-endian, in its declared .size at its declared .offset (v4: global offsets,
 * hidden_none (left 0), printf, hostcall, default queue, completion action, multigrid; v5:
 * block counts, group sizes, remainders, grid dims, global offsets, heap, private/shared base,
 * queue pointer, dynamic LDS size, ...). Bytes beyond kernarg_segment_size are not touched.
 * dynamic_shared_pointer arguments receive, in .args order, the LDS offset
 * align_up(running, max(.pointee_align, 4)) starting at .group_segment_fixed_size; the running
 * end is returned in *out_group_segment_size (fixed + dynamic bytes incl. alignment padding:
 * the AQL packet's group_segment_size). No allocation; thread-safe; O(args).
 * block_count = grid_size / workgroup_size, remainder = grid_size % workgroup_size
 * (AMDGPUUsage "Code Object V5 Metadata" hidden arguments; device libs' ockl derives
 * get_num_groups as block_count + (remainder != 0)).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL kernel/out/dims, dims->dims not 1..3, a grid or
 * workgroup size 0, out not 16-byte aligned), HSAD_ERR_RESOURCE_EXHAUSTED (out_size smaller than
 * kernarg_segment_size), HSAD_ERR_ARG_COUNT (arg_count != explicit arguments; message says both
 * counts), HSAD_ERR_ARG_SIZE (BYTES value size != .size; names argument index, name, both
 * sizes; a typed value whose size is not its type's), HSAD_ERR_ARG_KIND (tag does not suit
 * .value_kind, e.g. LDS for a by_value; a typed value refused by the type check above: a float
 * for an integer parameter or the reverse, names both types; a SCALAR without a type, an
 * unknown type, a type on a POINTER or LDS value),
 * HSAD_ERR_ARG_VALUE (pointer does not fit a 4-byte slot, a hidden value does not fit its
 * declared size, or the group segment exceeds 4 GiB). On error `out` content is unspecified. */
hsad_status_t hsad_kernarg_build(const hsad_kernel_t *kernel, const hsad_karg_t *args,
                                 uint32_t arg_count, const hsad_dispatch_dims_t *dims,
                                 const hsad_kernarg_runtime_t *runtime, void *out,
                                 size_t out_size, uint32_t *out_group_segment_size);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_KERNARG_H */
