// api_cxx.cpp - the public headers used from C++ (issue 10: "runtime authors write C++ as often
// as C"). Compiled with g++ -std=c++11 -pedantic -Werror and linked into tests/test_headers.c,
// which calls the probes below and checks their results. Every installed header is included.
#include "codeobj/hsad_codeobj.h"
#include "common/hsad_status.h"
#include "common/hsad_version.h"
#include "fusion/hsad_fusion.h"
#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_aql.h"
#include "hsa-dispatch/hsad_monitor.h"
#include "hsa-dispatch/hsad_queue.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "hsa-dispatch/hsad_submit.h"
#include "memory/hsad_memory.h"
#include "tools/kfd-emu/kfd_emu_twin.h"

#include <cstdio>
#include <cstring>
#include <vector>

static_assert(sizeof(hsad_completion_t) == 24, "a completion is three words seen from C++");

// A twin defined in C++ keeps its C name (the test looks it up with dlsym).
KFD_EMU_TWIN(api_cxx_probe) {
  (void)d;
  (void)wg;
  return 0;
}

static int fail(char *msg, size_t n, const char *what, hsad_status_t s) {
  std::snprintf(msg, n, "%s: %s: %s", what, hsad_status_name(s), hsad_last_error());
  return -1;
}

// saxpy (y = a*x + y, OpenCL kernel kernels/saxpy.cl) dispatched from C++ on device 0 through
// hsad_kernel_dispatch with the HSAD_KARG_* constructors, waited on through its completion.
// x[i] = i, y[i] = 1000 - i, a = 3: returns the number of elements that differ from the
// reference computed here, or -1 with the reason in msg.
extern "C" int api_cxx_saxpy(const char *hsaco, uint32_t n, char *msg, size_t msg_size) {
  hsad_runtime_t *rt = nullptr;
  hsad_device_t *dev = nullptr;
  hsad_program_t *prog = nullptr;
  const hsad_device_kernel_t *k = nullptr;
  hsad_queue_t *q = nullptr;
  void *xv = nullptr, *yv = nullptr;
  hsad_status_t s;
  if ((s = hsad_runtime_open(&rt)) != HSAD_OK) return fail(msg, msg_size, "runtime_open", s);
  if ((s = hsad_device_get(rt, 0, &dev)) != HSAD_OK) return fail(msg, msg_size, "device_get", s);
  if ((s = hsad_program_load_file(dev, hsaco, &prog)) != HSAD_OK)
    return fail(msg, msg_size, "program_load_file", s);
  if ((s = hsad_program_kernel(prog, "saxpy", &k)) != HSAD_OK)
    return fail(msg, msg_size, "program_kernel", s);
  if ((s = hsad_device_queue(dev, &q)) != HSAD_OK) return fail(msg, msg_size, "device_queue", s);
  if ((s = hsad_buffer_alloc(dev, n * sizeof(float), &xv)) != HSAD_OK ||
      (s = hsad_buffer_alloc(dev, n * sizeof(float), &yv)) != HSAD_OK)
    return fail(msg, msg_size, "buffer_alloc", s);
  float *x = static_cast<float *>(xv), *y = static_cast<float *>(yv);
  std::vector<float> want(n);
  const float a = 3.0f;
  for (uint32_t i = 0; i < n; i++) {
    x[i] = static_cast<float>(i);
    y[i] = static_cast<float>(1000 - static_cast<int>(i));
    want[i] = a * x[i] + y[i];
  }
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t launch;
  std::memset(&launch, 0, sizeof launch);
  launch.dims = 1;
  launch.grid[0] = n;
  launch.block[0] = 64;
  launch.args = args;
  launch.arg_count = 4;
  hsad_completion_t done;
  uint64_t packet_id = 0;
  s = hsad_kernel_dispatch(q, k, &launch, hsad_now_ns() + 1000000000ull, &done, &packet_id);
  if (s != HSAD_OK) return fail(msg, msg_size, "kernel_dispatch", s);
  if ((s = hsad_completion_wait(&done, hsad_now_ns() + 20000000000ull)) != HSAD_OK)
    return fail(msg, msg_size, "completion_wait", s);
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) bad += y[i] != want[i];
  hsad_buffer_free(xv);
  hsad_buffer_free(yv);
  hsad_program_destroy(prog);
  hsad_runtime_close(rt);
  std::snprintf(msg, msg_size, "ok");
  return bad;
}

// The version macro and the linked library agree (hsad_version.h's rule: same MAJOR, linked
// >= built-against).
extern "C" int api_cxx_version(char *out, size_t n) {
  std::snprintf(out, n, "%s", hsad_version_string());
  return hsad_version() >= HSAD_VERSION ? 1 : 0;
}

// Issue 21: the literal forms from C++. HSAD_KARG_I32 ... F64 and HSAD_KARG_VAL of an rvalue of
// an arithmetic type are HSAD_KARG_SCALAR values (the value inside the hsad_karg_t, so an array
// of them outlives the temporaries it was made from); HSAD_KARG_VAL of an lvalue keeps pointing
// at it, typed. Writes into `fields` a line per constructor ("tag type size bits"), then
// dispatches saxpy (y = a*x + y) with a = HSAD_KARG_VAL(2.5f) and n = HSAD_KARG_U32(count),
// x[i] = i, y[i] = 1; then with a = HSAD_KARG_I32(2) (an integer for `float a`), whose refusal
// (status name and message) goes to `refused`. Returns the number of wrong elements of y, or -1
// with the reason in refused.
extern "C" int api_cxx_literals(const char *hsaco, uint32_t count, char *fields, size_t fn,
                                char *refused, size_t rn) {
  int lv = -7;
  const double dv = 0.5;
  hsad_karg_t made[] = {HSAD_KARG_I32(-2), HSAD_KARG_U32(3u), HSAD_KARG_I64(-4),
                        HSAD_KARG_U64(5u), HSAD_KARG_F32(2.5f), HSAD_KARG_F64(1.5),
                        HSAD_KARG_VAL(2.5f), HSAD_KARG_VAL(lv + 1), HSAD_KARG_VAL(lv),
                        HSAD_KARG_VAL(dv)};
  size_t k = 0;
  for (size_t i = 0; i < sizeof made / sizeof made[0] && k < fn; i++) {
    const hsad_karg_t &m = made[i];
    unsigned long long bits = m.tag == HSAD_KARG_SCALAR ? m.scalar
                              : m.bytes == &lv          ? 1ull  // points at lv
                              : m.bytes == &dv          ? 2ull  // points at dv
                                                        : 0ull;
    k += (size_t)std::snprintf(fields + k, fn - k, "%u %s %u 0x%llx\n", m.tag,
                               hsad_karg_type_name((hsad_karg_type_t)m.type), m.size, bits);
  }
  hsad_runtime_t *rt = nullptr;
  hsad_device_t *dev = nullptr;
  hsad_program_t *prog = nullptr;
  const hsad_device_kernel_t *kern = nullptr;
  hsad_queue_t *q = nullptr;
  void *xv = nullptr, *yv = nullptr;
  hsad_status_t s;
  if ((s = hsad_runtime_open(&rt)) != HSAD_OK) return fail(refused, rn, "runtime_open", s);
  if ((s = hsad_device_get(rt, 0, &dev)) != HSAD_OK) return fail(refused, rn, "device_get", s);
  if ((s = hsad_program_load_file(dev, hsaco, &prog)) != HSAD_OK)
    return fail(refused, rn, "program_load_file", s);
  if ((s = hsad_program_kernel(prog, "saxpy", &kern)) != HSAD_OK)
    return fail(refused, rn, "program_kernel", s);
  if ((s = hsad_device_queue(dev, &q)) != HSAD_OK) return fail(refused, rn, "device_queue", s);
  if ((s = hsad_buffer_alloc(dev, count * sizeof(float), &xv)) != HSAD_OK ||
      (s = hsad_buffer_alloc(dev, count * sizeof(float), &yv)) != HSAD_OK)
    return fail(refused, rn, "buffer_alloc", s);
  float *x = static_cast<float *>(xv), *y = static_cast<float *>(yv);
  for (uint32_t i = 0; i < count; i++) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  hsad_karg_t args[] = {HSAD_KARG_VAL(2.5f), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y),
                        HSAD_KARG_U32(count)};
  hsad_launch_t launch;
  std::memset(&launch, 0, sizeof launch);
  launch.dims = 1;
  launch.grid[0] = count;
  launch.block[0] = 64;
  launch.args = args;
  launch.arg_count = 4;
  hsad_completion_t done;
  s = hsad_kernel_dispatch(q, kern, &launch, hsad_now_ns() + 1000000000ull, &done, nullptr);
  if (s != HSAD_OK) return fail(refused, rn, "kernel_dispatch", s);
  if ((s = hsad_completion_wait(&done, hsad_now_ns() + 20000000000ull)) != HSAD_OK)
    return fail(refused, rn, "completion_wait", s);
  int bad = 0;
  for (uint32_t i = 0; i < count; i++) bad += y[i] != 2.5f * static_cast<float>(i) + 1.0f;
  args[0] = HSAD_KARG_I32(2);
  s = hsad_kernel_dispatch(q, kern, &launch, hsad_now_ns() + 1000000000ull, nullptr, nullptr);
  std::snprintf(refused, rn, "%s: %s", hsad_status_name(s), s ? hsad_last_error() : "accepted");
  hsad_buffer_free(xv);
  hsad_buffer_free(yv);
  hsad_program_destroy(prog);
  hsad_runtime_close(rt);
  return bad;
}
