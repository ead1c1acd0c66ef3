/* A partial hidden block (test fixture, issue 10): what clang emits for a kernel with
 * amdgpu-implicitarg-num-bytes=24 and a note that still lists the hidden arguments of the full
 * code object v5 block (JuliaGPU/AMDGPU.jl #10, llvm PR #142199). The 40-byte kernarg segment
 * holds the explicit arguments (0..12) and block counts, group sizes and remainders (16..40);
 * the note also lists global offsets and grid dims at 56..82, past the segment.
 * Assembled with clang-15 -x assembler -mcode-object-version=5 (gfx90a). */
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"

.text
.globl hw_implicit24
.p2align 8
.type hw_implicit24,@function
hw_implicit24:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_implicit24
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 40
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: hw_implicit24
    .symbol: hw_implicit24.kd
    .kernarg_segment_size: 40
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global, .name: out}
      - {.offset: 8, .size: 4, .value_kind: by_value, .name: count, .type_name: int}
      - {.offset: 16, .size: 4, .value_kind: hidden_block_count_x}
      - {.offset: 20, .size: 4, .value_kind: hidden_block_count_y}
      - {.offset: 24, .size: 4, .value_kind: hidden_block_count_z}
      - {.offset: 28, .size: 2, .value_kind: hidden_group_size_x}
      - {.offset: 30, .size: 2, .value_kind: hidden_group_size_y}
      - {.offset: 32, .size: 2, .value_kind: hidden_group_size_z}
      - {.offset: 34, .size: 2, .value_kind: hidden_remainder_x}
      - {.offset: 36, .size: 2, .value_kind: hidden_remainder_y}
      - {.offset: 38, .size: 2, .value_kind: hidden_remainder_z}
      - {.offset: 56, .size: 8, .value_kind: hidden_global_offset_x}
      - {.offset: 64, .size: 8, .value_kind: hidden_global_offset_y}
      - {.offset: 72, .size: 8, .value_kind: hidden_global_offset_z}
      - {.offset: 80, .size: 2, .value_kind: hidden_grid_dims}
...
.end_amdgpu_metadata
