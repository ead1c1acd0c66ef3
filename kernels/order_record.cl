/* order_record: the work-item with global id (0,0,0) takes a ticket from a global sequence
 * counter and stores it: slots[index] = atomic_inc(counter) (the counter's value before the
 * increment). Dispatches ordered by dependencies record increasing tickets. */
kernel void order_record(global uint *counter, global uint *slots, uint index) {
  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)
    slots[index] = atomic_inc(counter);
}
