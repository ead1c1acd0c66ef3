/* Hand-written kernels (test fixture): hidden arguments at odd, partial, unaligned offsets and
 * declared sizes the compiler never emits, to check the kernarg builder writes exactly what the
 * metadata declares. Assembled with clang-15 -x assembler -mcode-object-version=5 (gfx90a). */
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"

.text
.globl hw_partial
.p2align 8
.type hw_partial,@function
hw_partial:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_partial
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 80
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.text
.globl hw_narrow
.p2align 8
.type hw_narrow,@function
hw_narrow:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_narrow
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 8
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.text
.globl hw_nohidden
.p2align 8
.type hw_nohidden,@function
hw_nohidden:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_nohidden
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 4
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 2]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: hw_partial
    .symbol: hw_partial.kd
    .kernarg_segment_size: 80
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 8, .value_kind: global_buffer, .address_space: global}
      - {.offset: 10, .size: 2, .value_kind: hidden_group_size_x}
      - {.offset: 13, .size: 4, .value_kind: hidden_block_count_x}
      - {.offset: 24, .size: 4, .value_kind: hidden_private_base}
      - {.offset: 28, .size: 4, .value_kind: hidden_shared_base}
      - {.offset: 32, .size: 8, .value_kind: hidden_queue_ptr}
      - {.offset: 40, .size: 8, .value_kind: hidden_heap_v1}
      - {.offset: 48, .size: 8, .value_kind: hidden_default_queue}
      - {.offset: 56, .size: 8, .value_kind: hidden_completion_action}
      - {.offset: 64, .size: 8, .value_kind: hidden_printf_buffer}
      - {.offset: 72, .size: 2, .value_kind: hidden_remainder_x}
      - {.offset: 74, .size: 2, .value_kind: hidden_grid_dims}
  - .name: hw_narrow
    .symbol: hw_narrow.kd
    .kernarg_segment_size: 8
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 2, .value_kind: hidden_block_count_x}
      - {.offset: 4, .size: 4, .value_kind: by_value}
  - .name: hw_nohidden
    .symbol: hw_nohidden.kd
    .kernarg_segment_size: 4
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 4, .value_kind: by_value, .name: count, .type_name: int}
...
.end_amdgpu_metadata
