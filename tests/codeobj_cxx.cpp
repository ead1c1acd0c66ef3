// codeobj_cxx.cpp - compiled with g++ (C++11, -pedantic): codeobj/hsad_codeobj.h must be a valid
// C++ header (issue 10: _Static_assert is no C++ keyword). test_codeobj_target calls the probe.
#include "codeobj/hsad_codeobj.h"

#include <cstddef>

static_assert(sizeof(hsad_kernel_descriptor_t) == 64, "descriptor seen from C++");

extern "C" int co_cxx_probe(char *out, size_t n) {
  hsad_target_id_t id;
  if (hsad_target_id_parse("amdgcn-amd-amdhsa--gfx90a:xnack-", &id) != HSAD_OK) return -1;
  hsad_target_id_format(&id, out, n);
  return static_cast<int>(sizeof(hsad_kernel_descriptor_t) +
                          offsetof(hsad_kernel_descriptor_t, compute_pgm_rsrc1));
}
