/* stubs.c - thunk entry points ROCr imports that kfd-emu answers without emulating anything:
 * plain success where ROCr only configures hardware state kfd-emu does not have, and "not
 * supported" where ROCr has a fallback (RuntimeEnable keeps ROCr off its debugger path; no GWS,
 * IPC sharing, graphics interop or SVM attributes). */
#include "tools/kfd-emu/emu.h"

EMU_PUBLIC HSAKMT_STATUS hsaKmtRuntimeEnable(void *rdebug, bool setup_ttmp) {
  (void)rdebug;
  (void)setup_ttmp;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}
EMU_PUBLIC HSAKMT_STATUS hsaKmtRuntimeDisable(void) { return HSAKMT_STATUS_SUCCESS; }

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetMemoryPolicy(HSAuint32 node, HSAuint32 def, HSAuint32 alt,
                                               void *base, HSAuint64 size) {
  (void)node, (void)def, (void)alt, (void)base, (void)size;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetTrapHandler(HSAuint32 node, void *base, HSAuint64 size,
                                              void *buf, HSAuint64 bufsize) {
  (void)node, (void)base, (void)size, (void)buf, (void)bufsize;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtAllocQueueGWS(HSA_QUEUEID id, HSAuint32 n, HSAuint32 *first) {
  (void)id, (void)n, (void)first;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtShareMemory(void *addr, HSAuint64 size,
                                           HsaSharedMemoryHandle *h) {
  (void)addr, (void)size, (void)h;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtRegisterSharedHandle(const HsaSharedMemoryHandle *h, void **addr,
                                                    HSAuint64 *size) {
  (void)h, (void)addr, (void)size;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtRegisterSharedHandleToNodes(const HsaSharedMemoryHandle *h,
                                                           void **addr, HSAuint64 *size,
                                                           HSAuint64 n, HSAuint32 *nodes) {
  (void)h, (void)addr, (void)size, (void)n, (void)nodes;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtRegisterGraphicsHandleToNodes(HSAuint64 h,
                                                             HsaGraphicsResourceInfo *info,
                                                             HSAuint64 n, HSAuint32 *nodes) {
  (void)h, (void)info, (void)n, (void)nodes;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSVMSetAttr(void *start, HSAuint64 size, unsigned int n,
                                          HSA_SVM_ATTRIBUTE *attrs) {
  (void)start, (void)size, (void)n, (void)attrs;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSVMGetAttr(void *start, HSAuint64 size, unsigned int n,
                                          HSA_SVM_ATTRIBUTE *attrs) {
  (void)start, (void)size, (void)n, (void)attrs;
  return HSAKMT_STATUS_NOT_SUPPORTED;
}
