/* count_dispatch: the work-item with global id (0,0,0) atomically adds `value` to *counter,
 * once per dispatch whatever the grid size. */
kernel void count_dispatch(global uint *counter, uint value) {
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)
    atomic_add(counter, value);
}
