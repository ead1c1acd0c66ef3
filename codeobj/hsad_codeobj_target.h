/* hsad_codeobj_target.h - target IDs: processor and xnack/sramecc features, parse, format,
 * compatibility (AMDGPUUsage "Target ID").
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_TARGET_H
#define HSAD_CODEOBJ_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Targets (AMDGPUUsage "Target ID", "ELF Header" e_flags).                                   */

/* Feature setting of a target ID: xnack / sramecc. */
typedef enum hsad_feature {
  HSAD_FEATURE_UNSUPPORTED = 0, /* processor has no such feature (absent from the ID) */
  HSAD_FEATURE_ANY = 1,         /* supported, not specified: runs with either setting */
  HSAD_FEATURE_OFF = 2,         /* ":xnack-" */
  HSAD_FEATURE_ON = 3,          /* ":xnack+" */
} hsad_feature_t;

/* A parsed target ID such as "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" or "gfx90a:xnack-". */
typedef struct hsad_target_id {
  char processor[16];       /* "gfx90a" */
  hsad_feature_t xnack;
  hsad_feature_t sramecc;
} hsad_target_id_t;

/* Parses a target ID, with or without the "amdgcn-amd-amdhsa--" prefix (an environment word
 * such as "amdgcn-amd-amdhsa-unknown-gfx90a", as newer clangs write in bundle entry ids, is
 * skipped the same way: llvm #91637). Features given in the
 * string become ON/OFF, the others ANY. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, empty, unknown
 * feature, processor name longer than 15 characters, feature given twice). */
hsad_status_t hsad_target_id_parse(const char *text, hsad_target_id_t *out_id);

/* Formats as "gfx90a:sramecc+:xnack-" (features in the canonical alphabetical order; ANY and
 * UNSUPPORTED omitted). Returns the length snprintf would; out may be NULL with n = 0. */
int hsad_target_id_format(const hsad_target_id_t *id, char *out, size_t n);

/* Target-ID compatibility (AMDGPUUsage "Target ID" and ROCr's ISA matching): same processor,
 * and for each feature the code object's ON/OFF must equal the agent's; a code object feature
 * ANY/UNSUPPORTED matches any agent setting; an agent feature ANY (unspecified, e.g. a user
 * typed "gfx90a") matches any code object setting. Pure; thread-safe. */
bool hsad_target_id_compatible(const hsad_target_id_t *code_object, const hsad_target_id_t *agent);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_TARGET_H */
