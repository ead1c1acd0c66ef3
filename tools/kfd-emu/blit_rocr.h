/* blit_rocr.h - host twins of ROCr's own blit kernels (CopyAligned, CopyMisaligned, Fill).
 *
 * ROCr 5.2.3 (src/core/runtime/amd_blit_kernel.cpp, amd_gpu_agent.cpp GpuAgent::AssembleShader)
 * runs hsa_amd_memory_async_copy, hsa_amd_memory_fill and its loader's code uploads through
 * three precompiled kernels whenever no SDMA queue is available (kfd-emu refuses SDMA queues).
 * They are not in any ELF and have no names: each is a bare 256-byte amd_kernel_code_t
 * (hsa/amd_hsa_kernel_code.h) followed by its machine code, in a page-aligned allocation of its
 * own; packet.kernel_object is the address of that header. kfd-emu cannot find them by symbol,
 * so it asks this module, by the header's contents.
 *
 * Identification: ROCr zeroes the header and sets exactly
 *   kernel_code_entry_byte_offset   = 256 (sizeof(amd_kernel_code_t))
 *   kernel_code_properties          = ENABLE_SGPR_KERNARG_SEGMENT_PTR
 *   compute_pgm_rsrc1               = GRANULATED_WORKITEM_VGPR_COUNT | GRANULATED_WAVEFRONT_SGPR_COUNT
 *                                     | FLOAT_DENORM_MODE_16_64 = 3 | ENABLE_IEEE_MODE = 1
 *   compute_pgm_rsrc2               = USER_SGPR_COUNT = 2 | ENABLE_SGPR_WORKGROUP_ID_X = 1
 *   max_scratch_backing_memory_byte_size = 0, or on gfx90a only the ACCUM_OFFSET
 *                                     ((vgpr granules + 1) * 8 / 4 - 1) << 32
 * with granulated counts (sgprs - 1) / 8 and (vgprs - 1) / 4 from ROCr's table:
 *   CopyAligned    32 SGPRs, 12 VGPRs -> SGPR/VGPR granules 3/2
 *   CopyMisaligned 23 SGPRs, 10 VGPRs ->                    2/2
 *   Fill           19 SGPRs,  8 VGPRs ->                    2/1
 * and every other byte of the 256 zero. A header that differs in any byte is not a ROCr blit.
 *
 * Kernarg layouts (little-endian, ROCr's BlitKernel::KernelArgs, 16-byte aligned):
 *   CopyAligned:    u64 phase1_src_start @0, phase1_dst_start @8, phase2_src_start @16,
 *                   phase2_dst_start @24, phase3_src_start @32, phase3_dst_start @40,
 *                   phase4_src_start @48, phase4_dst_start @56, phase4_src_end @64,
 *                   phase4_dst_end @72; u32 num_workitems @80
 *   CopyMisaligned: u64 phase1_src_start @0, phase1_dst_start @8, phase2_src_start @16,
 *                   phase2_dst_start @24, phase2_src_end @32, phase2_dst_end @40;
 *                   u32 num_workitems @48
 *   Fill:           u64 phase1_dst_start @0, phase2_dst_start @8, phase2_dst_end @16;
 *                   u32 fill_value @24, num_workitems @28
 * ROCr dispatches them 1-D with 64-work-item workgroups and a grid of num_workitems
 * (64 * 4 * CUs for the copies, 64 * CUs for Fill). The twins do what the machine code does
 * (each work-item id = workgroup id * 64 + local id; phases documented in blit_rocr.c),
 * including which loops are per lane and which run for the whole wavefront.
 *
 * Thread safety: kfd_emu_rocr_blit_twin() only reads the header; callable from any thread.
 */
#ifndef KFD_EMU_BLIT_ROCR_H
#define KFD_EMU_BLIT_ROCR_H

#include "tools/kfd-emu/kfd_emu_twin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the twin of the ROCr blit kernel whose amd_kernel_code_t starts at kernel_object
 * (packet.kernel_object), and its name ("CopyAligned", "CopyMisaligned", "Fill", static
 * storage) in *out_name when out_name is not NULL; or NULL (and *out_name untouched) when
 * kernel_object is NULL, not 4096-byte aligned, or the 256 bytes there are not exactly one of the
 * three headers above. The 256 bytes at kernel_object must be readable: a page-aligned address
 * in a mapped page is enough, which is why unaligned objects are refused before any read. */
kfd_emu_twin_fn kfd_emu_rocr_blit_twin(const void *kernel_object, const char **out_name);

#ifdef __cplusplus
}
#endif
#endif /* KFD_EMU_BLIT_ROCR_H */
