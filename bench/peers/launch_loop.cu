// Peer for bench/launch_overhead.py: native host code calling cuLaunchKernel in a loop (the
// launch path compiled host code can reach), same tiny kernel as the other peers.
// Build: nvcc -O2 -o launch_loop launch_loop.cu -lcuda
// Run:   launch_loop N REPEATS [memref] [sync] [enqueue]
// With "memref", the kernel takes five parameters as Nova passes a memref<32xf32>.
// Prints one line per repeat: microseconds per launch (N launches on a non-blocking stream,
// then one stream synchronize). With "sync", every launch is followed by cuStreamSynchronize
// and the line is microseconds per launch + synchronize: the native floor of a call that
// launches one kernel and waits for it (bench/launch_overhead.py section b). With "enqueue",
// the line is the host time of the N cuLaunchKernel calls alone (before the final synchronize):
// if it equals the total, the loop is bound by the host's launch calls, not by the GPU.
// At the end it reads the 32 counters back: each must equal the launches made (warm-up
// included), else it prints what it found and exits 3 (bench/launch_overhead.py: WRONG).
#include <cuda.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static const char* kPtx =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry add1(.param .u64 x) {\n"
    "  .reg .b32 %r<2>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [x];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  ld.global.f32 %f1, [%rd4];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n  st.global.f32 [%rd4], %f2;\n  ret;\n}\n"
    // The same kernel taking a memref the way Nova passes one (allocated, aligned, offset,
    // size, stride): five parameters instead of one.
    ".visible .entry add1_memref(.param .u64 a, .param .u64 x, .param .u64 o, .param .u64 n,"
    " .param .u64 s) {\n"
    "  .reg .b32 %r<2>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [x];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  ld.global.f32 %f1, [%rd4];\n"
    "  add.f32 %f2, %f1, 0f3F800000;\n  st.global.f32 [%rd4], %f2;\n  ret;\n}\n";

#define CHECK(call)                                                        \
  do {                                                                     \
    CUresult r = (call);                                                   \
    if (r != CUDA_SUCCESS) {                                               \
      const char* name = nullptr;                                          \
      cuGetErrorName(r, &name);                                            \
      std::fprintf(stderr, "%s failed: %s\n", #call, name ? name : "?");   \
      return 1;                                                            \
    }                                                                      \
  } while (0)

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 1000;
  int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  bool memref = false, sync = false, enqueue = false;
  for (int a = 3; a < argc; ++a) {
    if (std::strcmp(argv[a], "sync") == 0) {
      sync = true;
    } else if (std::strcmp(argv[a], "enqueue") == 0) {
      enqueue = true;
    } else if (argv[a][0] == 'm') {
      memref = true;
    } else {
      std::fprintf(stderr, "unknown mode '%s' (expected memref, sync or enqueue)\n", argv[a]);
      return 2;
    }
  }
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  CUstream stream;
  CUdeviceptr x;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuModuleLoadData(&mod, kPtx));
  CHECK(cuModuleGetFunction(&fn, mod, memref ? "add1_memref" : "add1"));
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&x, 32 * sizeof(float)));
  CHECK(cuMemsetD32(x, 0, 32));
  long long offset = 0, size = 32, stride = 1;
  void* one[] = {&x};
  void* five[] = {&x, &x, &offset, &size, &stride};
  void** params = memref ? five : one;
  for (int warm = 0; warm < 100; ++warm)
    CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
  CHECK(cuStreamSynchronize(stream));
  for (int r = 0; r < repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
      if (sync) CHECK(cuStreamSynchronize(stream));
    }
    auto enqueued = std::chrono::steady_clock::now();
    CHECK(cuStreamSynchronize(stream));
    auto end = enqueue ? enqueued : std::chrono::steady_clock::now();
    std::chrono::duration<double, std::micro> us = end - start;
    std::printf("%.4f\n", us.count() / n);
  }
  float counters[32];
  CHECK(cuMemcpyDtoH(counters, x, sizeof counters));
  const float expected = 100.0f + static_cast<float>(n) * static_cast<float>(repeats);
  for (int i = 0; i < 32; ++i) {
    if (counters[i] != expected) {
      std::fprintf(stderr, "WRONG: counter %d is %g, expected %g launches\n", i, counters[i],
                   expected);
      return 3;
    }
  }
  return 0;
}
