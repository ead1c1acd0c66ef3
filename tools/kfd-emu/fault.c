/* fault.c - a twin that faults is a GPU fault, not a crash of the user's process.
 *
 * A kernel that dereferences a bad pointer makes a GPU raise a memory-violation queue error;
 * its host twin would take SIGSEGV (SIGBUS, SIGFPE for an integer division by zero, SIGILL) and
 * kill the process. kfd-emu installs one handler for these signals (when the first KFD open
 * happens) and runs each twin call under sigsetjmp on its CP thread, with a per-thread flag set
 * only while the twin runs: a fault inside a twin jumps back to the CP, which reports it through
 * the queue's error path naming the kernel; a fault anywhere else goes to the handler that was
 * installed before kfd-emu's (or the default action, which ends the process as before).
 *
 * Limits: the twin is abandoned where it faulted, so a lock it held stays held (twins should not
 * take locks); a handler installed after kfd-emu's replaces it.
 */
#define _GNU_SOURCE
#include "tools/kfd-emu/emu.h"

#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int fault_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define NSIGS (sizeof fault_sigs / sizeof fault_sigs[0])
static struct sigaction previous[NSIGS];
static pthread_once_t installed = PTHREAD_ONCE_INIT;

/* Per CP thread, touched by the thread before any fault (so no lazy TLS allocation happens in
 * the handler). initial-exec: reading it in a signal handler calls nothing. */
#define EMU_TLS __thread __attribute__((tls_model("initial-exec")))
static EMU_TLS sigjmp_buf *twin_jmp;
static EMU_TLS volatile sig_atomic_t in_twin;
static EMU_TLS emu_twin_fault_t last_fault;
static EMU_TLS void *alt_stack;

static void on_fault(int sig, siginfo_t *info, void *ctx) {
  if (in_twin && twin_jmp) {
    in_twin = 0;
    last_fault.sig = sig;
    last_fault.code = info ? info->si_code : 0;
    last_fault.addr = info ? info->si_addr : NULL;
    siglongjmp(*twin_jmp, 1);
  }
  for (size_t i = 0; i < NSIGS; i++) {
    if (fault_sigs[i] != sig) continue;
    const struct sigaction *p = &previous[i];
    if (p->sa_flags & SA_SIGINFO) {
      p->sa_sigaction(sig, info, ctx);
      return;
    }
    if (p->sa_handler == SIG_IGN) return;
    if (p->sa_handler != SIG_DFL) {
      p->sa_handler(sig);
      return;
    }
    /* Default action: restore it; a hardware fault re-executes and ends the process as it
     * would have without kfd-emu, a sent signal is sent again. */
    sigaction(sig, p, NULL);
    if (!info || info->si_code <= 0) raise(sig);
    return;
  }
}

static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER; /* NODEFER: siglongjmp leaves it unblocked */
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NSIGS; i++) sigaction(fault_sigs[i], &sa, &previous[i]);
}

void emu_fault_install(void) { pthread_once(&installed, install); }

void emu_fault_thread_start(void) {
  in_twin = 0;
  twin_jmp = NULL;
  /* An alternate stack, so a twin that overflows its stack is caught too. */
  size_t sz = 64 * 1024;
  alt_stack = malloc(sz);
  if (alt_stack) {
    stack_t st = {.ss_sp = alt_stack, .ss_size = sz, .ss_flags = 0};
    if (sigaltstack(&st, NULL) != 0) {
      free(alt_stack);
      alt_stack = NULL;
    }
  }
}

void emu_fault_thread_stop(void) {
  if (!alt_stack) return;
  stack_t st = {.ss_flags = SS_DISABLE};
  sigaltstack(&st, NULL);
  free(alt_stack);
  alt_stack = NULL;
}

int emu_twin_call(kfd_emu_twin_fn twin, const kfd_emu_dispatch_t *d,
                  const kfd_emu_workgroup_t *wg, emu_twin_fault_t *out_fault) {
  sigjmp_buf jb;
  if (sigsetjmp(jb, 0)) {
    twin_jmp = NULL;
    *out_fault = last_fault;
    return EMU_TWIN_FAULTED;
  }
  twin_jmp = &jb;
  in_twin = 1;
  int r = twin(d, wg);
  in_twin = 0;
  twin_jmp = NULL;
  return r;
}

void emu_twin_fault_describe(const emu_twin_fault_t *f, char *out, size_t n) {
  switch (f->sig) {
  case SIGFPE:
    snprintf(out, n, "SIGFPE, %s", f->code == FPE_INTDIV   ? "integer divide by zero"
                                    : f->code == FPE_INTOVF ? "integer overflow"
                                                            : "arithmetic exception");
    break;
  case SIGILL: snprintf(out, n, "SIGILL at %p", f->addr); break;
  case SIGBUS: snprintf(out, n, "SIGBUS at address %p", f->addr); break;
  default: snprintf(out, n, "SIGSEGV at address %p", f->addr); break;
  }
}
