/* hsad_status.h - status codes and error messages shared by every hsa-dispatch module.
 *
 * Every fallible hsad_* call returns an hsad_status_t. On failure the call also records a
 * human-readable reason (what failed, which object, which limit, what to do) in a per-thread
 * buffer that hsad_last_error() returns. The library never prints to stderr on its own.
 *
 * Thread safety: the message buffer is thread-local; a call on one thread never changes the
 * message another thread reads. The message stays valid until the next failing hsad_* call on
 * the same thread.
 *
 * Code ranges: 1-99 common, 100-199 codeobj, 200-299 hsa-dispatch, 300-399 fusion,
 * 400-499 memory. Values are stable: tests and tools compare them.
 */
#ifndef HSAD_STATUS_H
#define HSAD_STATUS_H

#include <stdarg.h>

/* Compile-time layout checks that read the same in C11 and C++11 (C++ has no _Static_assert
 * keyword; C11 has no static_assert without <assert.h>). Every public header uses this. */
#ifndef HSAD_STATIC_ASSERT
#ifdef __cplusplus
#define HSAD_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define HSAD_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum hsad_status {
  HSAD_OK = 0,
  /* common */
  HSAD_ERR_INVALID_ARGUMENT = 1, /* a NULL pointer, a zero size, a flag out of range; one
                                    cause per message: a NULL pointer argument reads
                                    "FN: NULL PARAM" with PARAM as the header spells it
                                    (e.g. "hsad_program_load_file: NULL out_program"), the
                                    first NULL in parameter order (hsad_null_args) */
  HSAD_ERR_OUT_OF_MEMORY = 2,    /* host allocation failed */
  HSAD_ERR_IO = 3,               /* a file could not be opened or read */
  HSAD_ERR_UNSUPPORTED = 4,      /* valid request this build or device does not support */
  HSAD_ERR_TIMEOUT = 5,          /* a deadline passed before the event happened */
  HSAD_ERR_RESOURCE_EXHAUSTED = 6, /* a bounded pool or ring is full */
  HSAD_ERR_HSA = 7,              /* a ROCr (HSA runtime) call failed; message has its status */
  HSAD_ERR_CLOSED = 8,           /* the object or runtime was already closed */
  HSAD_ERR_DRIVER = 9,           /* a vendor driver call (CUDA driver API) failed; message has
                                    its error name and string */

  /* codeobj: 100-199 */
  HSAD_ERR_NOT_ELF = 100,             /* input is no ELF file and no offload bundle */
  HSAD_ERR_TRUNCATED = 101,           /* a header, section or note runs past the end */
  HSAD_ERR_BAD_ELF = 102,             /* wrong class, data encoding, e_machine or OS ABI */
  HSAD_ERR_CODE_OBJECT_VERSION = 103, /* code object version not supported */
  HSAD_ERR_BAD_NOTE = 104,            /* NT_AMDGPU_METADATA missing or malformed */
  HSAD_ERR_BAD_METADATA = 105,        /* msgpack does not decode */
  HSAD_ERR_METADATA_TYPE = 106,       /* a metadata field has the wrong type or is missing */
  HSAD_ERR_UNKNOWN_VALUE_KIND = 107,  /* an argument's .value_kind is not one we know */
  HSAD_ERR_MISSING_DESCRIPTOR = 108,  /* the NAME.kd kernel descriptor symbol is absent */
  HSAD_ERR_KERNEL_NOT_FOUND = 109,    /* no kernel of that name */
  HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND = 110, /* no bundle entry / code object for that target */
  HSAD_ERR_TARGET_MISMATCH = 111,     /* amdhsa.target and e_flags disagree */
  HSAD_ERR_ARG_COUNT = 112,           /* wrong number of explicit kernel arguments */
  HSAD_ERR_ARG_SIZE = 113,            /* an argument value has the wrong size */
  HSAD_ERR_ARG_KIND = 114,            /* an argument value of the wrong kind */
  HSAD_ERR_ARG_VALUE = 115,           /* a value does not fit its field */
  HSAD_ERR_COMPILE = 116,             /* comgr compilation failed; message has diagnostics */

  /* hsa-dispatch: 200-299 */
  HSAD_ERR_DEVICE_INDEX = 200,    /* device index out of range */
  HSAD_ERR_ISA_MISMATCH = 201,    /* code object ISA is not one of the agent's ISAs */
  HSAD_ERR_GRID = 202,            /* grid size zero or too large */
  HSAD_ERR_WORKGROUP = 203,       /* workgroup size zero, above max or != reqd size */
  HSAD_ERR_LDS_LIMIT = 204,       /* group segment above the device's LDS per workgroup */
  HSAD_ERR_SCRATCH_LIMIT = 205,   /* private segment above the device's scratch limit */
  HSAD_ERR_QUEUE_ERROR = 206,     /* the queue reported an error (sticky) */
  HSAD_ERR_NO_DEVICE = 207,       /* no usable GPU (no /dev/kfd and no emulator) */

  /* fusion: 300-399 */
  HSAD_ERR_GRAPH = 300,           /* invalid graph: cycle, unknown node, too many deps */

  /* memory: 400-499 */
  HSAD_ERR_NUMA = 400,            /* NUMA node out of range or policy failed */
  HSAD_ERR_NOT_ALLOCATED = 401,   /* a pointer no hsad allocation or registration holds */
  HSAD_ERR_FREED = 402,           /* memory already freed / unregistered (double free, use) */
  HSAD_ERR_RANGE = 403,           /* a size that overflows, a range past an allocation's end */
  HSAD_ERR_OVERLAP = 404,         /* source and destination ranges of a copy overlap */
  HSAD_ERR_NO_ACCESS = 405,       /* the device cannot reach that memory */
  HSAD_ERR_IN_USE = 406,          /* memory a timed-out synchronous copy or fill still uses */
} hsad_status_t;

/* Returns the enumerator's name, e.g. "HSAD_ERR_TIMEOUT"; "HSAD_ERR_UNKNOWN" for other values.
 * The string is static. Thread-safe. */
const char *hsad_status_name(hsad_status_t status);

/* Returns the reason recorded by the last failing hsad_* call on this thread, or "" if none.
 * Owned by the library; valid until the next failing call on this thread. */
const char *hsad_last_error(void);

/* Library-internal: records a formatted reason and returns status unchanged, so a failing path
 * reads `return hsad_fail(HSAD_ERR_GRID, "grid[%u] is 0", i);`. Messages longer than 1023
 * bytes are truncated. */
hsad_status_t hsad_fail(hsad_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
hsad_status_t hsad_failv(hsad_status_t status, const char *fmt, va_list ap);

/* Library-internal: one pointer argument of a public call and its name as the public header
 * spells it (e.g. {path, "path"}, {out, "out_program"}). */
typedef struct hsad_arg {
  const void *ptr;
  const char *name;
} hsad_arg_t;

/* Library-internal: the NULL test of a public call's pointer arguments, so that every argument
 * error names one cause. Scans args[0..count) in order; for the first whose ptr is NULL it
 * records "FN: NULL NAME" (e.g. "hsad_program_load_file: NULL out_program") and returns
 * HSAD_ERR_INVALID_ARGUMENT; returns HSAD_OK (message untouched) when none is NULL. fn and every
 * name are static strings; nothing is allocated; thread-safe as hsad_fail is. A caller tests its
 * other conditions (a size 0, a count out of range) after it, each with its own message.
 * Use the macro: `hsad_status_t s = HSAD_NULL_ARGS("hsad_x", {a, "a"}, {out, "out_y"});`. The
 * list is a compound literal, so each pointer converts to const void * as an assignment does
 * (data pointers only: test a function pointer on its own). */
hsad_status_t hsad_null_args(const char *fn, const hsad_arg_t *args, unsigned count);
#define HSAD_NULL_ARGS(fn, ...)                                                                \
  hsad_null_args((fn), (const hsad_arg_t[]){__VA_ARGS__},                                      \
                 (unsigned)(sizeof((const hsad_arg_t[]){__VA_ARGS__}) / sizeof(hsad_arg_t)))

/* Library-internal: clears this thread's message (used by tests). */
void hsad_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_STATUS_H */
