/* count_dispatch: the work-item with global id (0,0,0) atomically adds `value` to *counter,
 * once per dispatch whatever the grid size. */
kernel void count_dispatch(global uint *counter, uint value) {
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)
    atomic_add(counter, value);
}

/* count_pair: work-item (0,0,0) atomically adds `value` to *a and to *b (a POINTER, a 4-byte
 * value, a POINTER: the launch cache's signature (3, 0b010), tests/test_dispatch_queue_opts.c). */
kernel void count_pair(global uint *a, uint value, global uint *b) {
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0) {
    atomic_add(a, value);
    atomic_add(b, value);
  }
}

/* count_scaled: work-item (0,0,0) atomically adds value * scale to *counter (two 4-byte values,
 * a POINTER: signature (3, 0b011)). */
kernel void count_scaled(uint value, uint scale, global uint *counter) {
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)
    atomic_add(counter, value * scale);
}
