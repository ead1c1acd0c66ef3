/* big_private: a 4 KiB private array indexed at run time, so the kernel needs scratch
 * (.private_segment_fixed_size >= 4096). For every global id i < n, with s = in[i]:
 *   p[k] = s ^ (k * 2654435761u)               for k = 0..1023
 *   j = s & 1023; acc = 0;
 *   repeat 1024 times: acc += p[j]; j = (j * 5 + 1) & 1023
 *   out[i] = acc                               (uint arithmetic, modulo 2^32)
 * j walks all 1024 slots (a full-period generator mod 1024), so every slot is read once. */
#define BIG_PRIVATE_WORDS 1024

kernel void big_private(global const uint *in, global uint *out, uint n) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  uint p[BIG_PRIVATE_WORDS];
  uint s = in[i];
  for (uint k = 0; k < BIG_PRIVATE_WORDS; k++) p[k] = s ^ (k * 2654435761u);
  uint j = s & (BIG_PRIVATE_WORDS - 1), acc = 0;
  for (uint k = 0; k < BIG_PRIVATE_WORDS; k++) {
    acc += p[j];
    j = (j * 5 + 1) & (BIG_PRIVATE_WORDS - 1);
  }
  out[i] = acc;
}
