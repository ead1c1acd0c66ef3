// scale_bias.h - included by scale_op.h next to it (a nested include)
#define SCALE_BIAS 3.0f
