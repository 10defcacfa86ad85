// The mesh kernel again in the AVX-512 build (`_mesh_chunk_avx512`: -mavx512f/vl/dq/bw, floating
// contraction off, so the same operations and roundings as the baseline build). Its groups keep
// AVX2's 32-byte vectors; AVX-512's mask registers and 32 vector registers serve their compares,
// selects and spills. `flowkit.native` loads this build where the CPU runs AVX-512.
#define FLOWKIT_SIMD_BYTES 32
#include "mesh_chunk.cc"
