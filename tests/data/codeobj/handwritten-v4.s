/* Hand-written kernels (test fixture): hidden arguments at odd, partial, unaligned offsets and
 * declared sizes the compiler never emits, to check the kernarg builder writes exactly what the
 * metadata declares. Assembled with clang-15 -x assembler -mcode-object-version=4 (gfx90a). */
.amdgcn_target "amdgcn-amd-amdhsa--gfx90a"

.text
.globl hw_v4
.p2align 8
.type hw_v4,@function
hw_v4:
  s_endpgm

.rodata
.p2align 6
.amdhsa_kernel hw_v4
  .amdhsa_next_free_vgpr 1
  .amdhsa_next_free_sgpr 1
  .amdhsa_kernarg_size 80
  .amdhsa_user_sgpr_kernarg_segment_ptr 1
  .amdhsa_accum_offset 4
.end_amdhsa_kernel

.amdgpu_metadata
---
amdhsa.version: [1, 1]
amdhsa.target: amdgcn-amd-amdhsa--gfx90a
amdhsa.kernels:
  - .name: hw_v4
    .symbol: hw_v4.kd
    .kernarg_segment_size: 80
    .group_segment_fixed_size: 0
    .private_segment_fixed_size: 0
    .kernarg_segment_align: 8
    .wavefront_size: 64
    .sgpr_count: 2
    .vgpr_count: 1
    .max_flat_workgroup_size: 256
    .args:
      - {.offset: 0, .size: 4, .value_kind: by_value}
      - {.offset: 8, .size: 8, .value_kind: hidden_global_offset_x}
      - {.offset: 16, .size: 8, .value_kind: hidden_global_offset_y}
      - {.offset: 24, .size: 8, .value_kind: hidden_global_offset_z}
      - {.offset: 32, .size: 8, .value_kind: hidden_printf_buffer}
      - {.offset: 40, .size: 8, .value_kind: hidden_default_queue}
      - {.offset: 48, .size: 8, .value_kind: hidden_completion_action}
      - {.offset: 56, .size: 8, .value_kind: hidden_none}
      - {.offset: 64, .size: 8, .value_kind: hidden_multigrid_sync_arg}
      - {.offset: 72, .size: 8, .value_kind: hidden_hostcall_buffer}
...
.end_amdgpu_metadata
