// The grid kernel in the AVX2 build of the library (`_mesh_chunk_avx2`, with -mavx2 and
// without FMA: the same roundings as the baseline build), an object of its own name.
#include "grid_chunk.cc"
