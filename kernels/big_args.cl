/* big_args: kernels whose kernarg segments exceed the default per-slot kernarg block (512
 * bytes), and by-value vectors and structs.
 *   args72(global ulong *out, ulong a0, ..., ulong a71): work-item 0 stores out[i] = a_i
 *     (kernarg segment 8 + 72 x 8 = 584 bytes of explicit arguments, plus hidden ones);
 *   struct_1k(global uint *out, struct blob b, uint n): out[i] = b.v[i % 256] + i for i < n
 *     (a 1 KiB by-value struct);
 *   struct_4k(global uint *out, struct blob4k b, uint n): out[i] = b.v[i % 1024] + i for i < n
 *     (CUDA's and HIP's 4 KiB of parameters: kernarg segment above 4 KiB with the hidden ones);
 *   struct_8k(global uint *out, struct blob8k b, uint n): out[i] = b.v[i % 2048] + i for i < n
 *     (an 8 KiB struct: kernarg segment above hsa-dispatch's HSAD_KERNARG_SEGMENT_MAX);
 *   scale4(global float4 *y, float4 s, uint n): y[i] = y[i] * s for i < n (by-value float4);
 *   args8(global ulong *out, ulong a0, ..., ulong a7): work-item 0 stores out[i] = a_i (8-byte
 *     scalars in a launch the per-thread launch cache takes: at most 16 arguments). */
#define A8(p) ulong p##0, ulong p##1, ulong p##2, ulong p##3, ulong p##4, ulong p##5, \
  ulong p##6, ulong p##7
#define S8(o, p) out[o + 0] = p##0; out[o + 1] = p##1; out[o + 2] = p##2; out[o + 3] = p##3; \
  out[o + 4] = p##4; out[o + 5] = p##5; out[o + 6] = p##6; out[o + 7] = p##7;

kernel void args72(global ulong *out, A8(a0), A8(a1), A8(a2), A8(a3), A8(a4), A8(a5), A8(a6),
                   A8(a7), A8(a8)) {
  if (get_global_id(0) != 0) return;
  S8(0, a0) S8(8, a1) S8(16, a2) S8(24, a3) S8(32, a4) S8(40, a5) S8(48, a6) S8(56, a7)
  S8(64, a8)
}

kernel void args8(global ulong *out, A8(a)) {
  if (get_global_id(0) != 0) return;
  S8(0, a)
}

struct blob {
  uint v[256];
};

kernel void struct_1k(global uint *out, struct blob b, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = b.v[i % 256] + (uint)i;
}

struct blob4k {
  uint v[1024];
};

kernel void struct_4k(global uint *out, struct blob4k b, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = b.v[i % 1024] + (uint)i;
}

struct blob8k {
  uint v[2048];
};

kernel void struct_8k(global uint *out, struct blob8k b, uint n) {
  size_t i = get_global_id(0);
  if (i < n) out[i] = b.v[i % 2048] + (uint)i;
}

kernel void scale4(global float4 *y, float4 s, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = y[i] * s;
}
