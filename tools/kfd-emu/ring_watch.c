/* ring_watch.c - KFD_EMU_RING_WATCH=1: every store into a queue's ring is checked against the
 * AQL publication rule (a packet's body is complete before its header becomes valid).
 *
 * A real packet processor may read a packet the moment its header is valid (another producer's
 * doorbell can already cover it), so a body byte written after the header was published may
 * be read stale. Timing rarely shows it; this mode shows it every time: each queue's ring is
 * mapped read-only, every store into it faults, and the handler looks at the slot before
 * letting the store through (the page is made writable, the store single-stepped with the x86
 * trap flag, the page made read-only again). A store to bytes 2-63 of a packet whose id lies
 * between the read and write index and whose header type is already valid is recorded; the
 * queue's CP then raises an invalid-packet-format queue error naming the packet and byte.
 * Stores to bytes 0-1 (publishing, or the CP writing INVALID back) are the rule's own. Costs
 * two signals per store: for tests only. Rings that are not whole pages are not watched.
 * Thread safety: while one thread's store is being single-stepped the page is writable, so a
 * racing store of another thread to the same page is not checked (never wrongly reported).
 */
#define _GNU_SOURCE
#include "tools/kfd-emu/emu.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define WATCH_MAX 64
#define EFLAGS_TF 0x100

typedef struct ring_watch {
  uint8_t *_Atomic ring; /* NULL: free entry */
  size_t bytes;
  uint32_t size; /* packets */
  const amd_queue_t *amdq;
  _Atomic uint64_t bad; /* the first store after publication: (id + 1) << 6 | byte; 0: none */
} ring_watch_t;

static ring_watch_t watches[WATCH_MAX];
static struct sigaction prev_segv, prev_trap;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static size_t page;
static __thread __attribute__((tls_model("initial-exec"))) uint8_t *pending;

static void forward(const struct sigaction *p, int sig, siginfo_t *info, void *ctx) {
  if (p->sa_flags & SA_SIGINFO) {
    p->sa_sigaction(sig, info, ctx);
  } else if (p->sa_handler != SIG_IGN && p->sa_handler != SIG_DFL) {
    p->sa_handler(sig);
  } else if (p->sa_handler == SIG_DFL) {
    sigaction(sig, p, NULL); /* a hardware fault re-executes and ends the process */
    if (!info || info->si_code <= 0) raise(sig);
  }
}

static void on_segv(int sig, siginfo_t *info, void *ctx) {
  uint8_t *a = info ? (uint8_t *)info->si_addr : NULL;
  for (uint32_t i = 0; a && i < WATCH_MAX; i++) {
    ring_watch_t *w = &watches[i];
    uint8_t *r = atomic_load_explicit(&w->ring, memory_order_acquire);
    if (!r || a < r || a >= r + w->bytes) continue;
    size_t off = (size_t)(a - r);
    uint32_t slot = (uint32_t)(off / 64), byte = (uint32_t)(off % 64);
    uint16_t h = __atomic_load_n((const uint16_t *)(r + (size_t)slot * 64), __ATOMIC_ACQUIRE);
    if (byte >= 2 && ((h >> HSA_PACKET_HEADER_TYPE) & 0xff) != HSA_PACKET_TYPE_INVALID) {
      uint64_t rd = __atomic_load_n(&w->amdq->read_dispatch_id, __ATOMIC_ACQUIRE);
      uint64_t wr = __atomic_load_n(&w->amdq->write_dispatch_id, __ATOMIC_ACQUIRE);
      uint64_t id = rd + ((slot - rd) & (w->size - 1)); /* the live packet in this slot */
      uint64_t none = 0;
      if (id < wr) atomic_compare_exchange_strong(&w->bad, &none, (id + 1) << 6 | byte);
    }
    uint8_t *pg = (uint8_t *)((uintptr_t)a & ~(uintptr_t)(page - 1));
    mprotect(pg, page, PROT_READ | PROT_WRITE);
    pending = pg;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] |= EFLAGS_TF;
    return;
  }
  forward(&prev_segv, sig, info, ctx);
}

static void on_trap(int sig, siginfo_t *info, void *ctx) {
  if (pending) {
    mprotect(pending, page, PROT_READ);
    pending = NULL;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)EFLAGS_TF;
    return;
  }
  forward(&prev_trap, sig, info, ctx);
}

static void install(void) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &prev_segv);
  sa.sa_sigaction = on_trap;
  sigaction(SIGTRAP, &sa, &prev_trap);
}

int emu_ring_watch_add(uint8_t *ring, size_t bytes, uint32_t size, const amd_queue_t *amdq) {
  pthread_once(&installed, install);
  if (((uintptr_t)ring & (page - 1)) || (bytes & (page - 1))) {
    emu_log("KFD_EMU_RING_WATCH: a ring of %zu bytes at %p is not whole pages; not watched",
            bytes, (void *)ring);
    return -1;
  }
  for (int i = 0; i < WATCH_MAX; i++) {
    ring_watch_t *w = &watches[i];
    uint8_t *none = NULL;
    if (atomic_load(&w->ring)) continue;
    w->bytes = bytes;
    w->size = size;
    w->amdq = amdq;
    atomic_store(&w->bad, 0);
    if (!atomic_compare_exchange_strong(&w->ring, &none, ring)) continue;
    mprotect(ring, bytes, PROT_READ);
    return i;
  }
  emu_log("KFD_EMU_RING_WATCH: more than %d queues; ring at %p not watched", WATCH_MAX,
          (void *)ring);
  return -1;
}

void emu_ring_watch_remove(int i) {
  if (i < 0 || i >= WATCH_MAX) return;
  ring_watch_t *w = &watches[i];
  uint8_t *r = atomic_load(&w->ring);
  if (!r) return;
  mprotect(r, w->bytes, PROT_READ | PROT_WRITE);
  atomic_store(&w->ring, NULL);
}

bool emu_ring_watch_violation(int i, uint64_t *out_id, uint32_t *out_byte) {
  if (i < 0 || i >= WATCH_MAX) return false;
  uint64_t b = atomic_load_explicit(&watches[i].bad, memory_order_acquire);
  if (!b) return false;
  *out_id = (b >> 6) - 1;
  *out_byte = (uint32_t)(b & 63);
  return true;
}
