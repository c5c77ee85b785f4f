// What mma.sync (the tc-sm80 strategy's instruction) can do on this GPU with
// no memory traffic: every warp runs ACC independent m16n8k16 bf16
// accumulators for a number of rounds, fragments in registers. The figure
// docs/performance.md sets tc-sm80's GEMMs against.
//
//   nvcc -O3 -arch=sm_90a -o mma_sync_peak bench/mma_sync_peak.cu && ./mma_sync_peak
#include <cstdio>
#include <cuda_runtime.h>

#define CHECK(x)                                                              \
  do {                                                                        \
    cudaError_t err_ = (x);                                                   \
    if (err_ != cudaSuccess) {                                                \
      printf("%s: %s\n", #x, cudaGetErrorString(err_));                       \
      return 1;                                                               \
    }                                                                         \
  } while (0)

template <int ACC>
__global__ void peak(float *out, int rounds) {
  unsigned a0 = threadIdx.x * 0x3f803f80u, a1 = a0 ^ 1, a2 = a0 ^ 2, a3 = a0 ^ 3;
  unsigned b0 = a0 ^ 4, b1 = a0 ^ 5;
  float c[ACC][4] = {};
  for (int r = 0; r < rounds; r++) {
#pragma unroll
    for (int i = 0; i < ACC; i++)
      asm volatile(
          "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
          "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
          : "+f"(c[i][0]), "+f"(c[i][1]), "+f"(c[i][2]), "+f"(c[i][3])
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
  float s = 0;
  for (int i = 0; i < ACC; i++)
    for (int j = 0; j < 4; j++) s += c[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;  // keeps the mma.syncs live
}

template <int ACC>
int run(int warps, int blocks_per_sm) {
  int sms;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int blocks = sms * blocks_per_sm, threads = 32 * warps, rounds = 4096;
  float *out;
  CHECK(cudaMalloc(&out, sizeof(float) * blocks * threads));
  peak<ACC><<<blocks, threads>>>(out, 16);  // warm-up
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaEventRecord(start));
  peak<ACC><<<blocks, threads>>>(out, rounds);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  double flops = 2.0 * 16 * 8 * 16 * ACC * double(rounds) * warps * blocks;
  printf("%2d accumulators, %2d warps a block, %d blocks an SM: %6.1f TFLOP/s\n", ACC, warps,
         blocks_per_sm, flops / ms / 1e9);
  CHECK(cudaFree(out));
  return 0;
}

int main() {
  return run<8>(8, 1) || run<16>(8, 1) || run<32>(8, 1) || run<16>(16, 1) || run<32>(4, 2) ||
         run<16>(8, 2);
}
