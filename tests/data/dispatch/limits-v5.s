/* Hand-written kernels (hsa-dispatch test fixture) whose metadata exercises dispatch checks the
 * compiler will not produce: a private segment above the per-work-item scratch limit of wave64
 * (8387584 / 64 = 131056 bytes; clang refuses such a stack frame), a dynamic stack, and a
 * required workgroup size. Never executed. Assembled with clang-15 -x assembler
 * -mcode-object-version=5 (gfx90a). */
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"

.text
.globl hd_huge_private
.p2align 8
.type hd_huge_private,@function
hd_huge_private:
  s_endpgm
.globl hd_dyn_stack
.p2align 8
.type hd_dyn_stack,@function
hd_dyn_stack:
  s_endpgm
.globl hd_reqd
.p2align 8
.type hd_reqd,@function
hd_reqd:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hd_huge_private
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_private_segment_fixed_size 200000
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hd_dyn_stack
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_private_segment_fixed_size 16
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hd_reqd
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: hd_huge_private
    .symbol: hd_huge_private.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 200000
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hd_dyn_stack
    .symbol: hd_dyn_stack.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 16
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .uses_dynamic_stack: true
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hd_reqd
    .symbol: hd_reqd.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 64
    .reqd_workgroup_size: [64, 1, 1]
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
...
.end_amdgpu_metadata
