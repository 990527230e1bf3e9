// An emulated CUDA driver for tests/unit/test_native_peer.py: the driver functions
// bench/peers/launch_loop.cu calls, on host memory (device pointers are host pointers, every
// call synchronous), with the peer's kernels run on the host by name, reading their parameters
// in the layout the peer's PTX declares. It lets the peer's host code (argument handling,
// parameter arrays, the chains' order of calls, its verification) run without a GPU; the PTX
// itself is checked by ptxas in the same test file.
// FAKE_CUDA_FAIL=<function> makes that function fail with CUDA_ERROR_NOT_SUPPORTED.
// With FAKE_CUDA_REPORT set, it prints "fake driver: A pool allocations, L live" to stderr at
// exit (every pool allocation must have been freed).
// Stream capture (the peer's "graph" chains): between cuStreamBeginCapture and
// cuStreamEndCapture, copies, launches and frees are recorded (a launch with copies of its
// parameter words) instead of run, and cuMemAllocAsync allocates graph memory that lives as
// long as the graph (as a graph memory node's address does); cuGraphLaunch runs the recording.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {
int g_pool_allocs = 0, g_live = 0;
const CUmemoryPool kPool = reinterpret_cast<CUmemoryPool>(0x3);

bool fails(const char* name) {
  const char* f = std::getenv("FAKE_CUDA_FAIL");
  return f != nullptr && std::strcmp(f, name) == 0;
}

uint64_t word(void** params, int i) { return *static_cast<uint64_t*>(params[i]); }

// Element i of the memref whose five words (allocated, aligned, offset, size, stride) start at
// parameter `first`.
float* at(void** params, int first, uint64_t i) {
  auto* aligned = reinterpret_cast<float*>(word(params, first + 1));
  return aligned + word(params, first + 2) + i * word(params, first + 4);
}

using Op = std::function<CUresult()>;
bool g_capturing = false;
std::vector<Op>* g_recording = nullptr;  // the graph being captured
std::vector<void*> g_graph_memory;  // cuMemAllocAsync blocks of the graph being captured

struct FakeGraph {
  std::vector<Op> ops;
  std::vector<void*> memory;  // its graph memory
};

// Run `op` now, or record it while a capture is open.
CUresult run_or_record(Op op) {
  if (!g_capturing) return op();
  g_recording->push_back(std::move(op));
  return CUDA_SUCCESS;
}

int param_count(const std::string& name) {
  if (name == "add1") return 1;
  if (name == "add1_memref") return 5;
  return name == "chain_add1_store2" ? 12 : 7;  // chain_add1: n, memref x (5), f32 one
}

CUresult launch_now(const std::string& name, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                    unsigned by, unsigned bz, unsigned shared, void** params, void** extra);

struct Report {
  ~Report() {
    if (std::getenv("FAKE_CUDA_REPORT") == nullptr) return;
    std::fprintf(stderr, "fake driver: %d pool allocations, %d live\n", g_pool_allocs, g_live);
  }
} g_report;
}  // namespace

#define FAILPOINT(name) \
  if (fails(name)) return CUDA_ERROR_NOT_SUPPORTED

extern "C" {
CUresult cuInit(unsigned) {
  FAILPOINT("cuInit");
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int* v, CUdevice_attribute a, CUdevice) {
  *v = a == CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED && !fails("pools") ? 1 : 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice) {
  *c = reinterpret_cast<CUcontext>(0x1);
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuGetErrorName(CUresult r, const char** s) {
  *s = r == CUDA_ERROR_NOT_SUPPORTED ? "CUDA_ERROR_NOT_SUPPORTED" : "CUDA_ERROR_INVALID_VALUE";
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  *m = reinterpret_cast<CUmodule>(const_cast<void*>(image));  // the PTX text
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  std::string entry = std::string(".entry ") + name + "(";
  if (std::strstr(reinterpret_cast<const char*>(m), entry.c_str()) == nullptr)
    return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(strdup(name));
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream* s, unsigned flags) {
  if (flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  *s = reinterpret_cast<CUstream>(0x2);
  return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream) { return CUDA_SUCCESS; }
CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(n));
  return CUDA_SUCCESS;
}
CUresult cuMemsetD32_v2(CUdeviceptr p, unsigned v, size_t n) {
  for (size_t i = 0; i < n; ++i) reinterpret_cast<unsigned*>(p)[i] = v;
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  std::memcpy(dst, reinterpret_cast<void*>(src), n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream) {
  return run_or_record([=] {
    std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src), n);
    return CUDA_SUCCESS;
  });
}
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  FAILPOINT("cuMemPoolCreate");
  if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  *pool = kPool;
  return CUDA_SUCCESS;
}
CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute a, void* value) {
  bool never = a == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD &&
               *static_cast<cuuint64_t*>(value) == UINT64_MAX;
  return pool == kPool && never ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream) {
  if (pool != kPool || g_capturing) return CUDA_ERROR_INVALID_VALUE;
  auto* block = static_cast<float*>(std::malloc(n));
  for (size_t i = 0; i < n / sizeof(float); ++i) block[i] = -1e9f;  // never what x holds
  *p = reinterpret_cast<CUdeviceptr>(block);
  ++g_pool_allocs;
  ++g_live;
  return CUDA_SUCCESS;
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) {
  if (g_capturing) return CUDA_SUCCESS;  // graph memory: freed with its graph
  std::free(reinterpret_cast<void*>(p));
  --g_live;
  return CUDA_SUCCESS;
}
CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream) {
  if (!g_capturing) return CUDA_ERROR_NOT_SUPPORTED;  // the peer uses its pool outside graphs
  auto* block = static_cast<float*>(std::malloc(n));
  for (size_t i = 0; i < n / sizeof(float); ++i) block[i] = -1e9f;
  *p = reinterpret_cast<CUdeviceptr>(block);
  g_graph_memory.push_back(block);
  return CUDA_SUCCESS;
}
CUresult cuStreamBeginCapture(CUstream, CUstreamCaptureMode) {
  FAILPOINT("cuStreamBeginCapture");
  if (g_capturing) return CUDA_ERROR_ILLEGAL_STATE;
  g_capturing = true;
  g_recording = new std::vector<Op>();
  g_graph_memory.clear();
  return CUDA_SUCCESS;
}
CUresult cuStreamEndCapture(CUstream, CUgraph* graph) {
  if (!g_capturing) return CUDA_ERROR_ILLEGAL_STATE;
  g_capturing = false;
  auto* g = new FakeGraph{std::move(*g_recording), g_graph_memory};
  delete g_recording;
  g_recording = nullptr;
  *graph = reinterpret_cast<CUgraph>(g);
  return CUDA_SUCCESS;
}
CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, unsigned long long) {
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  *exec = reinterpret_cast<CUgraphExec>(new FakeGraph{g->ops, g->memory});
  g->memory.clear();  // the executable graph owns it now
  return CUDA_SUCCESS;
}
CUresult cuGraphDestroy(CUgraph graph) {
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  for (void* block : g->memory) std::free(block);
  delete g;
  return CUDA_SUCCESS;
}
CUresult cuGraphLaunch(CUgraphExec exec, CUstream) {
  for (auto& op : reinterpret_cast<FakeGraph*>(exec)->ops) {
    CUresult r = op();
    if (r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned shared, CUstream, void** params,
                        void** extra) {
  std::string name = reinterpret_cast<const char*>(f);
  if (!g_capturing) return launch_now(name, gx, gy, gz, bx, by, bz, shared, params, extra);
  // a captured launch keeps copies of its parameter words, as the driver does
  int count = param_count(name);
  auto words = std::make_shared<std::vector<uint64_t>>(count, 0);
  for (int i = 0; i < count; ++i) {
    std::memcpy(&(*words)[i], params[i], name.rfind("chain", 0) == 0 && i == 6 ? 4 : 8);
  }
  g_recording->push_back([=] {
    std::vector<void*> ptrs(count);
    for (int i = 0; i < count; ++i) ptrs[i] = &(*words)[i];
    return launch_now(name, gx, gy, gz, bx, by, bz, shared, ptrs.data(), extra);
  });
  return CUDA_SUCCESS;
}
}  // extern "C"

namespace {
CUresult launch_now(const std::string& name, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                    unsigned by, unsigned bz, unsigned shared, void** params, void** extra) {
  if (gy != 1 || gz != 1 || by != 1 || bz != 1 || shared != 0 || extra != nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  if (name == "add1" || name == "add1_memref") {  // 32 counters, one block of 32
    auto* x = reinterpret_cast<float*>(word(params, name == "add1" ? 0 : 1));
    if (gx != 1 || bx != 32) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned t = 0; t < bx; ++t) x[t] += 1.0f;
    return CUDA_SUCCESS;
  }
  // chain_add1(n, memref x, f32 one) and chain_add1_store2(n, memref x, one, memref d)
  uint64_t n = word(params, 0);
  float one = *static_cast<float*>(params[6]);
  bool store2 = name == "chain_add1_store2";
  if (bx != 256 || uint64_t{gx} * bx < n || word(params, 4) != n ||
      (store2 && word(params, 10) != n))
    return CUDA_ERROR_INVALID_VALUE;
  for (uint64_t i = 0; i < n; ++i) {
    float v = *at(params, 1, i) + one;
    if (store2) *at(params, 7, i) = v;
    *at(params, 1, i) = v;
  }
  return CUDA_SUCCESS;
}
}
