/* Kernels for kfd-emu's own tests (tests/test_emu.c carries their twins; test_emu is linked
 * with -rdynamic so kfd-emu finds them in the process).
 *
 * emu_gate(flags): work-item 0 sets flags[0] = 1 (started), then waits until the host sets
 * flags[1] != 0: a kernel that stays running until the test releases it, so "has it
 * completed?" is decided by the test, not by a timer. */
kernel void emu_gate(global volatile uint *flags) {
  if (get_global_id(0) == 0) {
    flags[0] = 1;
    while (flags[1] == 0) {
    }
  }
}

/* emu_fault(p, divisor): p[0] = p[1] / divisor. Given a bad pointer or a zero divisor, its twin
 * faults (SIGSEGV, SIGFPE) as the host would; kfd-emu must report a queue error naming the
 * kernel and keep the process alive. */
kernel void emu_fault(global uint *p, uint divisor) {
  if (get_global_id(0) == 0) p[0] = p[1] / divisor;
}
