/* run_fault.h - hsad run under kfd-emu: a source-mode kernel's fault named before hsad dies.
 *
 * kfd-emu runs a kernel that has OpenCL C source through POCL, on POCL's host threads, outside
 * its fault handler (tools/kfd-emu/pocl.c): an access outside the kernel's buffers that hits
 * unmapped memory is SIGSEGV (SIGBUS) of the whole process, where a GPU raises a memory fault that
 * the queue reports (HSAD_ERR_QUEUE_ERROR). That state cannot be recovered from (the POCL
 * thread stopped mid-kernel, perhaps holding locks), so the guard does not turn it into an exit
 * code: the first fault on a thread other than hsad's main one writes one line on stderr (also
 * with --json) naming the kernel, the address and the buffers, then the handlers installed before
 * the guard run (kfd-emu's, which restores the default action) and the process ends by the
 * signal as before (a shell's exit status 128 + the signal number; a core file where enabled).
 * A fault on hsad's main thread prints nothing: it is hsad's or the library's, not the kernel's.
 * Arm it only around a dispatch of a source-mode kernel: no host twin runs then (kfd-emu traps a
 * twin's fault and goes on, which the line would misreport). Not thread-safe: arm and disarm
 * from the main thread. */
#ifndef HSAD_RUN_FAULT_H
#define HSAD_RUN_FAULT_H

/* Installs the guard for SIGSEGV and SIGBUS (keeping the handlers installed before it, kfd-emu's,
 * which it calls after the line) with `line` (copied; at most 2 KiB kept) as the line to write: its
 * first "%p" (if any) becomes the faulting address in hex. 0, or -1 when sigaction failed. */
int hsad_run_fault_arm(const char *line);

/* Puts the handlers back as they were before hsad_run_fault_arm. */
void hsad_run_fault_disarm(void);

#endif /* HSAD_RUN_FAULT_H */
