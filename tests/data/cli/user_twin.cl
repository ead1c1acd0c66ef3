// user_twin.cl - a kernel kfd-emu has no twin for: tests/test_cli_docs.c builds one
// (tests/data/cli/user_twin.c) into a library and runs it through KFD_EMU_TWINS, as README.md
// tells a user to.
kernel void poly(global float *y, global const float *x, float a, uint n) {
  uint i = get_global_id(0);
  if (i < n) y[i] = a * x[i] * x[i] + 1.0f;
}
