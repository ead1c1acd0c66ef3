// nv_run.h - found through hsad run's -I (tests/data/nvidia/include): the by-value struct of
// nv_run.cu's byval kernel (24 bytes, align 8: c at 0, s at 2, i at 4, d at 8, t at 16).
struct mixed { char c; short s; int i; double d; char t[3]; };
