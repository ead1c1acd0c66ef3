/* Hand-written kernels (monitoring test fixture): metadata with exact register, spill,
 * scratch and LDS figures for the alert thresholds. Bodies are s_endpgm; run under kfd-emu
 * with KFD_EMU_NO_TWIN=noop. Assembled with clang-15 -x assembler -mcode-object-version=5
 * (gfx90a). */
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"

.text
.globl hm_plain
.p2align 8
.type hm_plain,@function
hm_plain:
  s_endpgm
.globl hm_spill10
.p2align 8
.type hm_spill10,@function
hm_spill10:
  s_endpgm
.globl hm_spill11
.p2align 8
.type hm_spill11,@function
hm_spill11:
  s_endpgm
.globl hm_scratch
.p2align 8
.type hm_scratch,@function
hm_scratch:
  s_endpgm
.globl hm_lds
.p2align 8
.type hm_lds,@function
hm_lds:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hm_plain
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 10
  .amdhsa_private_segment_fixed_size 0
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hm_spill10
  .amdhsa_next_free_vgpr 40
  .amdhsa_next_free_sgpr 4
  .amdhsa_private_segment_fixed_size 0
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 40
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hm_spill11
  .amdhsa_next_free_vgpr 40
  .amdhsa_next_free_sgpr 3
  .amdhsa_private_segment_fixed_size 0
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 40
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hm_scratch
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 10
  .amdhsa_private_segment_fixed_size 256
  .amdhsa_group_segment_fixed_size 0
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 8
.end_amdhsa_kernel
.p2align 6
.amdhsa_kernel hm_lds
  .amdhsa_next_free_vgpr 8
  .amdhsa_next_free_sgpr 10
  .amdhsa_private_segment_fixed_size 0
  .amdhsa_group_segment_fixed_size 32768
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 8
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: hm_plain
    .symbol: hm_plain.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .agpr_count: 0
    .vgpr_spill_count: 0
    .sgpr_spill_count: 0
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hm_spill10
    .symbol: hm_spill10.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 10
    .vgpr_count: 40
    .agpr_count: 0
    .vgpr_spill_count: 5
    .sgpr_spill_count: 0
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hm_spill11
    .symbol: hm_spill11.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 9
    .vgpr_count: 40
    .agpr_count: 0
    .vgpr_spill_count: 5
    .sgpr_spill_count: 0
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hm_scratch
    .symbol: hm_scratch.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 256
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .agpr_count: 0
    .vgpr_spill_count: 0
    .sgpr_spill_count: 0
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
  - .name: hm_lds
    .symbol: hm_lds.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 32768
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 16
    .vgpr_count: 8
    .agpr_count: 0
    .vgpr_spill_count: 0
    .sgpr_spill_count: 0
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
...
.end_amdgpu_metadata
