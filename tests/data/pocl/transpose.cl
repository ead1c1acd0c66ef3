/* A user's own 2-D transpose through __local tiles: out[x * rows + y] = in[y * cols + x] for
 * an in matrix of `rows` x `cols` floats. Each 16x16 workgroup loads a tile, waits at a barrier
 * and writes it transposed. transpose_dyn takes its tile as a dynamic __local argument
 * (TILE * (TILE + 1) floats). Partial workgroups at the right and bottom edges are fine. */
#define TILE 16

static void transpose_tile(global const float *in, global float *out, uint rows, uint cols,
                           local float *tile) {
  /* a partial workgroup (fewer work-items at an edge) still covers its whole tile */
  uint lx = get_local_id(0), ly = get_local_id(1);
  uint sx = get_local_size(0), sy = get_local_size(1);
  uint bx = get_group_id(0) * TILE, by = get_group_id(1) * TILE;
  for (uint j = ly; j < TILE; j += sy)
    for (uint i = lx; i < TILE; i += sx)
      if (by + j < rows && bx + i < cols) tile[j * (TILE + 1) + i] = in[(by + j) * cols + bx + i];
  barrier(CLK_LOCAL_MEM_FENCE);
  /* out row bx + b, column by + a holds in row by + a, column bx + b */
  for (uint b = ly; b < TILE; b += sy)
    for (uint a = lx; a < TILE; a += sx)
      if (by + a < rows && bx + b < cols) out[(bx + b) * rows + by + a] = tile[a * (TILE + 1) + b];
}

kernel void transpose(global const float *in, global float *out, uint rows, uint cols) {
  local float tile[TILE * (TILE + 1)];
  transpose_tile(in, out, rows, cols, tile);
}

kernel void transpose_dyn(global const float *in, global float *out, uint rows, uint cols,
                          local float *tile) {
  transpose_tile(in, out, rows, cols, tile);
}
