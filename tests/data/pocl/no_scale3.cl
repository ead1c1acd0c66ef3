// no_scale3.cl - builds, but has no kernel scale3 (hsad run --source names the file anyway)
kernel void other(global float *y) { y[get_global_id(0)] = 1.0f; }
