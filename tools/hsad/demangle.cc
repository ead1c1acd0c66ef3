// demangle.cc - hsad_cli_demangle: Itanium C++ ABI names (HIP kernels) through libstdc++'s
// abi::__cxa_demangle, so hsad needs no external demangler at run time.
#include <cxxabi.h>
#include <cstdlib>
#include <cstring>

extern "C" char *hsad_cli_demangle(const char *name) {
  if (!name || std::strncmp(name, "_Z", 2) != 0) return nullptr;
  int status = 0;
  char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0) {
    std::free(out);
    return nullptr;
  }
  return out;  // malloc'd by __cxa_demangle: the caller frees it
}
