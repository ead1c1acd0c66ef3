/* hsad_cli_args.h - kernel arguments of the hsad commands (tools/hsad/cli_args.c): element
 * types, scalar parsing, and the check of given arguments against a kernel's metadata that
 * `hsad run` (--arg SPEC) and `hsad graph` (a node's "args") share, with the same messages.
 *
 * An arg_t is one given argument: a buffer (kind, element type, count), a scalar or vector
 * (the value's bytes), raw bytes, or a dynamic LDS size. Not thread-safe (one command per
 * process). */
#ifndef HSAD_CLI_ARGS_H
#define HSAD_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsa-dispatch/hsad.h"

typedef enum { T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_I64, T_U64, T_F32, T_F64 } etype_t;
enum { CLI_NTYPES = 10 };
extern const char *const cli_tnames[CLI_NTYPES]; /* "i8" ... "f64" */
extern const uint32_t cli_tsize[CLI_NTYPES];     /* bytes of one element */

static inline bool cli_is_float(etype_t t) { return t == T_F32 || t == T_F64; }
static inline bool cli_is_signed(etype_t t) {
  return t == T_I8 || t == T_I16 || t == T_I32 || t == T_I64;
}

typedef enum { A_BUF, A_SCALAR, A_BYTES, A_LDS } akind_t;

/* values of a vector scalar (TYPE:V0,V1,...): OpenCL vectors have at most 16 elements */
#define VEC_MAX 16
/* raw bytes of hex:/bin: (a by-value argument; the kernarg segment is far smaller) */
#define BYTES_MAX (1u << 20)

/* A buffer's size limit: COUNT x element size must stay below this (and below SIZE_MAX). */
#define CLI_BUF_MAX_BYTES (1ull << 40)

typedef struct arg {
  akind_t kind;
  etype_t type;
  uint64_t count;
  void *ptr;
  uint8_t value[VEC_MAX * 8]; /* A_SCALAR: nvals values of cli_tsize[type] bytes */
  uint32_t nvals;
  uint8_t *bytes; /* A_BYTES: nbytes raw bytes (malloc'd) */
  uint32_t nbytes;
  uint32_t lds;
  char init[256];
  bool out;
  const char *out_file, *txt_file;
  const char *spec; /* as the user wrote it, for messages: the --arg value, a node's JSON arg */
} arg_t;

/* The type named by s[0..n): 0, or -1 when it is none of i8 u8 i16 u16 i32 u32 i64 u64 f32
 * f64. */
int cli_parse_type(const char *s, size_t n, etype_t *out);
/* Unsigned integer: decimal, or hex after 0x/0X (never octal: "010" is ten); no sign, no
 * trailing characters, at most max. */
int cli_parse_uint(const char *v, uint64_t max, uint64_t *out);
/* Signed integer from min to max, decimal or 0x hex after an optional sign; nothing after it. */
int cli_parse_int(const char *v, int64_t min, int64_t max, int64_t *out);
/* A value of type t into out (little-endian, cli_tsize[t] bytes): an integer in t's range
 * (no fraction, no exponent), a float in its range. On error, why says what: "'-1' is not an
 * integer from 0 to 4294967295 (u32)". */
int cli_parse_scalar(etype_t t, const char *v, uint8_t out[8], char *why, size_t whyn);
/* hex:BYTES[*N] (without "hex:"): pairs of hex digits in memory order ('_' and ' ' may
 * separate them), the whole repeated N times; a->kind = A_BYTES, a->bytes malloc'd. */
int cli_parse_hex(const char *h, arg_t *a, char *why, size_t whyn);

/* One --arg SPEC of hsad run into a (zeroed first; a->spec = spec): buf:TYPE:COUNT[:OPTION]...,
 * TYPE:VALUE, TYPE:V0,V1,..., hex:BYTES[*N], bin:FILE (read here) or lds:BYTES. 0, or -1 with
 * why naming the part that is wrong and what it accepts ("COUNT '0' is not a positive
 * integer"); a->bytes, out_file and txt_file are malloc'd (cli_args_free) even on failure. */
int cli_parse_arg_spec(const char *spec, arg_t *a, char *why, size_t whyn);

/* The kernel argument of a checked argument, the one conversion of hsad run (AMD and NVIDIA)
 * and hsad graph: a buffer's pointer (a->ptr, allocated by the caller), dynamic LDS / shared
 * memory bytes, raw bytes (a->bytes), or a scalar's value bytes (a->value; the karg points
 * into a, which must outlive it). pad_vec3: a 3-element vector takes 4 elements (AMD's
 * kernarg layout of OpenCL/HIP 3-vectors, padded with zeros by cli_check_args); CUDA's are
 * 3 wide (false). */
hsad_karg_t cli_arg_karg(const arg_t *a, bool pad_vec3);

/* Element i of an array of type t at base, integers exactly (every type fits in __int128;
 * 0 for a float type). */
__int128 cli_elem_int(etype_t t, const void *base, uint64_t i);
/* Element i as a double (integers converted, rounded to nearest beyond 2^53). */
double cli_elem_double(etype_t t, const void *base, uint64_t i);

/* Frees what parsing malloc'd in args[0..nargs) (bytes, out_file, txt_file); not buffers. */
void cli_args_free(arg_t *args, uint32_t nargs);

/* How the user gives arguments, for the hints in messages: --arg SPEC (hsad run) or a graph
 * node's "args" entries (hsad graph: "BUFFER", {"TYPE": V}, {"TYPE": [V0, ...]},
 * {"hex": "BYTES[*N]"}, {"lds": BYTES}). */
typedef enum { CLI_SYNTAX_RUN, CLI_SYNTAX_GRAPH } cli_syntax_t;

/* Checks args[0..nargs) against the explicit arguments of kernel kd (metadata .value_kind,
 * .size and .type_name, or for a C++ kernel without .type_name the types of its mangled name)
 * and pads 3-element vectors to 4. Returns 0, or -1 with the message in why and *out_bad the
 * index of the argument at fault (nargs when their number is wrong: "kernel 'saxpy' takes 4
 * argument(s) (float a, float* x, float* y, uint n), got 3 --arg" / "... got 3 in \"args\"").
 * A scalar whose type cannot be known is checked by size only: warn(ctx, message) is called
 * for it ("... only its size was checked (4 bytes, given u32:1000)"). */
int cli_check_args(const hsad_device_kernel_desc_t *kd, arg_t *args, uint32_t nargs,
                   cli_syntax_t syn, void (*warn)(void *ctx, const char *msg), void *ctx,
                   uint32_t *out_bad, char *why, size_t whyn);

/* "argument 3 ('n') of kernel 'saxpy'": explicit argument e of kd as the messages name it. */
const char *cli_arg_label_of(const hsad_device_kernel_desc_t *kd, uint32_t e, char *b, size_t n);

/* NVIDIA kernels (hsad run on an NVIDIA device): CUDA code objects keep no argument kinds,
 * only each parameter's size (`sizes`, nparams of them, from the cubin's .nv.info or the
 * driver). Checks args[0..nargs) (the --arg SPECs before any lds:BYTES) against them: counts,
 * a buffer only for an 8-byte parameter, raw bytes and scalars of exactly the size (CUDA's
 * 3-vectors are not padded); for a C++ kernel, the types of its mangled name as
 * cli_check_args reads them (pointer or value, the pointee's element type, the scalar's TYPE).
 * Returns 0, or -1 with the message in why and *out_bad the argument at fault (nargs when
 * their number is wrong: "kernel 'saxpy' takes 4 parameter(s) (4 bytes, 8 bytes, 8 bytes,
 * 4 bytes), got 3 --arg ..."). One warning (warn(ctx, msg)) when scalars were checked by size
 * only. */
int cli_check_nv_args(const char *kname, uint32_t nparams, const uint32_t *sizes, arg_t *args,
                      uint32_t nargs, void (*warn)(void *ctx, const char *msg), void *ctx,
                      uint32_t *out_bad, char *why, size_t whyn);

#endif
