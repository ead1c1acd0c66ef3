/* copy_rect: the library's 2-D/3-D copy kernel (memory/rect_blit.c runs it for
 * hsad_memcpy_2d_async / hsad_memcpy_3d_async on GPUs without an SDMA engine, or where one
 * dispatch beats a DMA per row). Units: pitches, slice pitches and width in bytes; any
 * alignment (pitches need not be multiples of 4, pointers may be odd).
 *
 * One work-item moves up to 16 bytes of one row: the grid is 1-D, `rows * per_row` work-items
 * (rows = height * depth, per_row = ceil(width / 16)), rounded up to whole workgroups; item i
 * copies bytes [x, min(x + 16, width)) of row r = i / per_row, x = (i % per_row) * 16, row r
 * being row (r % height) of slice (r / height) on each side. Items past the last row do
 * nothing. The two boxes must not share a byte (the library checks it row by row). */
kernel void hsad_copy_rect(global uchar *dst, global const uchar *src, ulong dst_pitch,
                           ulong dst_slice, ulong src_pitch, ulong src_slice, ulong width,
                           uint height, uint rows, uint per_row) {
  uint i = (uint)get_global_id(0);
  uint r = i / per_row;
  if (r >= rows) return;
  ulong x = (ulong)(i - r * per_row) * 16;
  ulong y = r % height, z = r / height;
  global uchar *d = dst + z * dst_slice + y * dst_pitch + x;
  global const uchar *s = src + z * src_slice + y * src_pitch + x;
  if (x + 16 <= width) {
    vstore16(vload16(0, s), 0, d);
    return;
  }
  for (ulong j = 0; x + j < width; j++) d[j] = s[j];
}
