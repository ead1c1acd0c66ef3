/* backend.c - what every front shares: the backends compiled in, process-unique ids, and
 * waits over completions of several backends (backend.h). Needs no ROCm header. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/backend.h"

#ifdef HSAD_WITH_NVIDIA
extern const hsad_backend_ops_t nv_backend_ops;
#endif

const hsad_backend_ops_t *const hsad_backends[] = {
#ifdef HSAD_WITH_NVIDIA
    &nv_backend_ops,
#endif
    NULL,
};

static _Atomic uint64_t backend_uid;

uint64_t hsad_backend_next_uid(void) {
  return atomic_fetch_add_explicit(&backend_uid, 1, memory_order_relaxed) + 1;
}

void hsad_backend_uid_skip(uint64_t next) {
  atomic_store_explicit(&backend_uid, next - 1, memory_order_relaxed);
}

hsad_status_t hsad_backend_wait_all(const hsad_completion_t *c, uint32_t count,
                                    uint64_t deadline_ns) {
  for (uint32_t i = 0; i < count; i++) {
    hsad_status_t s = hsad_completion_wait(&c[i], deadline_ns);
    if (s) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      return hsad_fail(s, "hsad_completion_wait_all: completion %u: %s", i, msg);
    }
  }
  return HSAD_OK;
}

hsad_status_t hsad_backend_wait_any(const hsad_completion_t *c, uint32_t count,
                                    uint64_t deadline_ns, uint32_t *out_index) {
  for (uint64_t slice = 2000;; slice = slice < 500000 ? slice * 2 : slice) {
    for (uint32_t i = 0; i < count; i++)
      if (hsad_completion_done(&c[i])) {
        *out_index = i;
        return hsad_completion_wait(&c[i], 0); /* says OK or why it ended */
      }
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns)
      return hsad_fail(HSAD_ERR_TIMEOUT, "hsad_completion_wait_any: none of %u completions "
                       "reached by the deadline", count);
    uint64_t d = deadline_ns - now < slice ? deadline_ns - now : slice;
    struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull)};
    nanosleep(&ts, NULL);
  }
}

hsad_status_t hsad_backend_read_file(const char *path, void **out_data, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return hsad_fail(HSAD_ERR_IO, "%s: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes", path, cap);
    }
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    char *grown = realloc(buf, cap * 2);
    if (!grown) free(buf);
    buf = grown;
    cap *= 2;
  }
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err) {
    free(buf);
    return hsad_fail(HSAD_ERR_IO, "%s: %s", path, strerror(err));
  }
  *out_data = buf;
  *out_size = n;
  return HSAD_OK;
}

hsad_status_t hsad_batch_entry_fail(hsad_status_t s, uint32_t i) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", hsad_last_error());
  return hsad_fail(s, "batch entry %u: %s", i, msg);
}

hsad_status_t hsad_backend_capture_refuse(const hsad_queue_t *q, const char *who) {
  if (!hsad_backend_capturing(q)) return HSAD_OK;
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  hsad_status_t s = ops->queue_error(q);
  if (s) return s;
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: queue %llu is capturing "
                   "(hsad_queue_capture_begin): a capture records hsad_kernel_dispatch and "
                   "hsad_queue_barrier only; end it first (hsad_queue_capture_end)", who,
                   (unsigned long long)ops->queue_trace_id(q));
}

hsad_status_t hsad_backend_batch_one_by_one(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                            uint32_t count, uint64_t deadline_ns,
                                            hsad_completion_t *out_completion,
                                            uint64_t *out_first_packet_id) {
  hsad_status_t refused = hsad_backend_capture_refuse(q, "hsad_queue_dispatch_batch");
  if (refused) return refused;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t id = 0;
    hsad_status_t s = hsad_queue_ops(q)->kernel_dispatch(
        q, items[i].kernel, &items[i].launch, deadline_ns, i == count - 1 ? out_completion : NULL, &id);
    if (s) return hsad_batch_entry_fail(s, i);
    if (i == 0 && out_first_packet_id) *out_first_packet_id = id;
  }
  return HSAD_OK;
}
