/* A kernel with no host twin anywhere: kfd-emu must report it (queue error naming it), or
 * complete it without running anything under KFD_EMU_NO_TWIN=noop. */
kernel void no_twin_here(global uint *out) { out[get_global_id(0)] = 7; }
