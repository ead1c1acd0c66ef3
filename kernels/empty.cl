/* empty: no arguments, no effect; for dispatch-rate measurements and queue tests. */
kernel void empty(void) {}
