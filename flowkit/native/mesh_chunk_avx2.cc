// The mesh kernel again, its group arithmetic in AVX2's 32-byte vectors (built with -mavx2 and
// without FMA: the same operations as the baseline build, in the same order, so the same
// roundings). `flowkit.native` loads this build where the CPU runs AVX2.
#define FLOWKIT_SIMD_BYTES 32
#include "mesh_chunk.cc"
