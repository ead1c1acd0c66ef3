// scale_op.h - included by foreign_scale.cl from an -I folder (tests/test_kfd_emu_source.c)
#ifndef SCALE_OP_H
#define SCALE_OP_H
#include "scale_bias.h"
static inline float scale_op(float x, float a) { return x * a + SCALE_BIAS; }
#endif
