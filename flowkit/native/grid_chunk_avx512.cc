// The grid kernel in the AVX-512 build of the library (`_mesh_chunk_avx512`, -mavx512f/vl/dq/bw
// with floating contraction off: the same roundings as the baseline build), an object of its own name.
#include "grid_chunk.cc"
