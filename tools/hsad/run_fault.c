/* run_fault.c - see run_fault.h. The handler calls only async-signal-safe functions (sigaction,
 * write, raise, getpid, syscall, nanosleep), on a line formatted before the dispatch. */
#define _GNU_SOURCE
#include "tools/hsad/run_fault.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const int guard_sigs[] = {SIGSEGV, SIGBUS};
#define NSIGS (sizeof guard_sigs / sizeof guard_sigs[0])
static struct sigaction previous[NSIGS];
static char line[2048];
static size_t line_len;
static int armed; /* 1 while the dispatch runs; 2 while the first fault writes the line; 3 after */
static bool installed; /* the guard's handlers are in place (arm .. disarm) */

/* The handler installed before the guard, as the kernel would have run it: kfd-emu's returns
 * only for faults it does not trap, having restored the default action. */
static void call_previous(const struct sigaction *p, int sig, siginfo_t *info, void *ctx) {
  if (p->sa_flags & SA_SIGINFO) {
    p->sa_sigaction(sig, info, ctx);
  } else if (p->sa_handler == SIG_DFL) {
    sigaction(sig, p, NULL); /* a hardware fault re-executes and ends the process */
    if (!info || info->si_code <= 0) raise(sig);
  } else if (p->sa_handler != SIG_IGN) {
    p->sa_handler(sig);
  }
}

/* line with its first "%p" replaced by addr in hex, on stderr. */
static void write_line(const void *addr) {
  const char *p = NULL;
  for (size_t i = 0; i + 1 < line_len; i++)
    if (line[i] == '%' && line[i + 1] == 'p') {
      p = line + i;
      break;
    }
  if (!p) {
    (void)!write(2, line, line_len);
    return;
  }
  char hex[2 + 16];
  size_t n = 0;
  uintptr_t v = (uintptr_t)addr;
  int shift = 60;
  while (shift > 0 && !((v >> shift) & 0xf)) shift -= 4;
  hex[n++] = '0';
  hex[n++] = 'x';
  for (; shift >= 0; shift -= 4) hex[n++] = "0123456789abcdef"[(v >> shift) & 0xf];
  (void)!write(2, line, (size_t)(p - line));
  (void)!write(2, hex, n);
  (void)!write(2, p + 2, line_len - (size_t)(p - line) - 2);
}

/* The line first, then the handlers installed before (kfd-emu's restores the default action,
 * so any later fault ends the process at once): a thread that faults while another writes the
 * line waits for it (up to 1 s), so the line is whole. */
static void on_fault(int sig, siginfo_t *info, void *ctx) {
  int one = 1;
  /* not hsad's thread (the main one, whose tid is the pid): POCL's, where the kernel runs */
  if (syscall(SYS_gettid) != getpid() &&
      __atomic_compare_exchange_n(&armed, &one, 2, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
    write_line(info ? info->si_addr : NULL);
    __atomic_store_n(&armed, 3, __ATOMIC_SEQ_CST);
  }
  struct timespec ms = {0, 1000000};
  for (int i = 0; i < 1000 && __atomic_load_n(&armed, __ATOMIC_SEQ_CST) == 2; i++)
    nanosleep(&ms, NULL);
  for (size_t i = 0; i < NSIGS; i++)
    if (guard_sigs[i] == sig) call_previous(&previous[i], sig, info, ctx);
}

int hsad_run_fault_arm(const char *text) {
  line_len = strlen(text);
  if (line_len > sizeof line) line_len = sizeof line;
  memcpy(line, text, line_len);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NSIGS; i++)
    if (sigaction(guard_sigs[i], &sa, &previous[i])) {
      while (i--) sigaction(guard_sigs[i], &previous[i], NULL);
      return -1;
    }
  installed = true;
  __atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
  return 0;
}

void hsad_run_fault_disarm(void) {
  int one = 1;
  __atomic_compare_exchange_n(&armed, &one, 0, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  if (!installed) return;
  installed = false;
  for (size_t i = 0; i < NSIGS; i++) sigaction(guard_sigs[i], &previous[i], NULL);
}
