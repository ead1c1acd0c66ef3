// byval: by-value parameters of several sizes and alignments. The driver's cuFuncGetParamInfo gives
// offsets 0, 8, 32, 48, 56, 64 and sizes 1, 24, 16, 8, 8, 8 (notes/nvidia-machine.md); the cubin's
// EIATTR_KPARAM_INFO records say the same.
struct mixed {
  char c;
  short s;
  int i;
  double d;
  char tail[3];
};

extern "C" __global__ void byval(char c, struct mixed m, float4 f, double d, unsigned long long u,
                                 int *out) {
  out[0] = c + m.c + m.s + m.i + (int)m.d + m.tail[0] + m.tail[2];
  out[1] = (int)(f.x + f.y + f.z + f.w);
  out[2] = (int)d;
  out[3] = (int)(u >> 32);
}

// No parameters at all.
extern "C" __global__ void noargs(void) {}
