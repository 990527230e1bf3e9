// Native C++ peer of Nova's benchmarks (driver API only, no CUDA runtime), built and run by
// bench/native_peer.py (nvcc on the GPU machine).
//
// Launch loops (bench/launch_overhead.py), the same tiny kernel as the other peers there:
//   launch_loop N REPEATS [memref] [sync] [enqueue] [noop]
// With "memref", the kernel takes five parameters as Nova passes a memref<32xf32>.
// Prints one line per repeat: microseconds per launch (N launches on a non-blocking stream,
// then one stream synchronize). With "sync", every launch is followed by cuStreamSynchronize
// and the line is microseconds per launch + synchronize: the native floor of a call that
// launches one kernel and waits for it (bench/launch_overhead.py section b). With "enqueue",
// the line is the host time of the N cuLaunchKernel calls alone (before the final synchronize):
// if it equals the total, the loop is bound by the host's launch calls, not by the GPU.
// At the end it reads the 32 counters back: each must equal the launches made (100 warm-up
// launches included).
//
// Synchronised chains (bench/memory_flat.py), per call what one of its entry points does:
//   launch_loop N REPEATS chain=MODE [elements=4096] [warmup=200] [graph] [noop]
// on a buffer x of `elements` floats (kernel: x[i] += 1, 256-thread blocks, parameters shaped
// as Nova passes them: index n, the memref's five words, the f32 constant), one call being
//   step             launch on x; cuStreamSynchronize
//   alloc_step       cuMemAllocFromPoolAsync d (a pool whose release threshold is UINT64_MAX,
//                    as Nova's); cuMemcpyAsync d <- x; launch on d; cuMemcpyAsync x <- d;
//                    cuMemFreeAsync d; cuStreamSynchronize
//   scratch_step     the same copies and launch on a preallocated d (no allocation)
//   alloc_only_step  allocate d; a launch that stores x[i] + 1 into d[i] and x[i]; free d;
//                    cuStreamSynchronize
// all on one non-blocking stream. With "graph", one call's operations (everything before its
// wait; the allocation then cuMemAllocAsync, a graph memory node) are captured once into a CUDA
// graph, and a call is cuGraphLaunch + cuStreamSynchronize (what Nova's automatic graphs do).
// Prints one line per repeat: microseconds per call (N calls).
// At the end every element of x must equal the calls made (warm-up included).
//
// Exit status: 0 when the results are right; 3 when they are wrong (stderr says what it found;
// bench/native_peer.py raises WrongResult); 2 for bad arguments; 1 when a driver call fails
// (stderr names the call and the error). "noop" skips every kernel launch (the copies,
// allocations and waits still run): the results must then come out wrong (exit 3), which is
// how tests check that the verification can fail.
#include <cuda.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The body of add1 and add1_memref after their parameter lists: x[tid.x] += 1.
#define PTX_ADD1_BODY                                                                         \
  "  .reg .b32 %r<2>;\n  .reg .f32 %f<3>;\n  .reg .b64 %rd<5>;\n"                             \
  "  ld.param.u64 %rd1, [x];\n  cvta.to.global.u64 %rd2, %rd1;\n  mov.u32 %r1, %tid.x;\n"     \
  "  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd4, %rd2, %rd3;\n  ld.global.f32 %f1, [%rd4];\n" \
  "  add.f32 %f2, %f1, 0f3F800000;\n  st.global.f32 [%rd4], %f2;\n  ret;\n}\n"
// The chain kernels' first instructions (after their register declarations): %rd2 = the global
// thread index i, done when i >= n, %rd9 = the address of element i of memref x.
#define PTX_CHAIN_X_ELEMENT                                                                   \
  "  ld.param.u64 %rd1, [n];\n  mov.u32 %r1, %ctaid.x;\n  mov.u32 %r2, %ntid.x;\n"            \
  "  mov.u32 %r3, %tid.x;\n  mad.lo.s32 %r4, %r1, %r2, %r3;\n  cvt.u64.u32 %rd2, %r4;\n"      \
  "  setp.ge.u64 %p1, %rd2, %rd1;\n  @%p1 bra DONE;\n"                                        \
  "  ld.param.u64 %rd3, [x];\n  ld.param.u64 %rd4, [xo];\n  ld.param.u64 %rd5, [xt];\n"       \
  "  mad.lo.s64 %rd6, %rd2, %rd5, %rd4;\n  shl.b64 %rd7, %rd6, 2;\n"                          \
  "  cvta.to.global.u64 %rd8, %rd3;\n  add.s64 %rd9, %rd8, %rd7;\n"

static const char* kPtx =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .entry add1(.param .u64 x) {\n" PTX_ADD1_BODY
    // The same kernel taking a memref the way Nova passes one (allocated, aligned, offset,
    // size, stride): five parameters instead of one.
    ".visible .entry add1_memref(.param .u64 a, .param .u64 x, .param .u64 o, .param .u64 n,"
    " .param .u64 s) {\n" PTX_ADD1_BODY
    // The chains' kernels, parameters as Nova's outlined kernels of bench/memory_flat.py take
    // them: (index n, memref x, f32 one) and, for alloc_only_step, (n, memref x, one, memref d).
    // Element i of a memref is at aligned + 4 * (offset + i * stride).
    ".visible .entry chain_add1(.param .u64 n, .param .u64 xa, .param .u64 x, .param .u64 xo,"
    " .param .u64 xs, .param .u64 xt, .param .f32 one) {\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<10>;\n"
    PTX_CHAIN_X_ELEMENT
    "  ld.global.f32 %f1, [%rd9];\n  ld.param.f32 %f2, [one];\n  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd9], %f3;\nDONE:\n  ret;\n}\n"
    ".visible .entry chain_add1_store2(.param .u64 n, .param .u64 xa, .param .u64 x,"
    " .param .u64 xo, .param .u64 xs, .param .u64 xt, .param .f32 one, .param .u64 da,"
    " .param .u64 d, .param .u64 do_, .param .u64 ds, .param .u64 dt) {\n"
    "  .reg .pred %p<2>;\n  .reg .b32 %r<5>;\n  .reg .f32 %f<4>;\n  .reg .b64 %rd<16>;\n"
    PTX_CHAIN_X_ELEMENT
    "  ld.param.u64 %rd10, [d];\n  ld.param.u64 %rd11, [do_];\n  ld.param.u64 %rd12, [dt];\n"
    "  mad.lo.s64 %rd13, %rd2, %rd12, %rd11;\n  shl.b64 %rd14, %rd13, 2;\n"
    "  cvta.to.global.u64 %rd15, %rd10;\n  add.s64 %rd15, %rd15, %rd14;\n"
    "  ld.global.f32 %f1, [%rd9];\n  ld.param.f32 %f2, [one];\n  add.f32 %f3, %f1, %f2;\n"
    "  st.global.f32 [%rd15], %f3;\n  st.global.f32 [%rd9], %f3;\nDONE:\n  ret;\n}\n";
#undef PTX_ADD1_BODY
#undef PTX_CHAIN_X_ELEMENT

#define CHECK(call)                                                                           \
  do {                                                                                        \
    CUresult r = (call);                                                                      \
    if (r != CUDA_SUCCESS) {                                                                  \
      const char* name = nullptr;                                                             \
      cuGetErrorName(r, &name);                                                               \
      std::fprintf(stderr, "%s failed: %s\n", #call, name ? name : "?");                      \
      return 1;                                                                               \
    }                                                                                         \
  } while (0)

enum class Chain { kNone, kStep, kAllocStep, kScratchStep, kAllocOnlyStep };

struct Options {
  long long n = 0;  // launches (or calls) per repeat
  long long repeats = 0;
  bool memref = false, sync = false, enqueue = false, noop = false, graph = false;
  Chain chain = Chain::kNone;
  long long elements = 4096;
  long long warmup = -1;  // -1: the mode's default (100 launches; 200 calls for chains)
};

// A memref<?xf32> descriptor as Nova passes it to a kernel (allocated, aligned, offset, size,
// stride), each word a kernel parameter.
struct Memref {
  CUdeviceptr allocated = 0, aligned = 0;
  long long offset = 0, size = 0, stride = 1;
};

struct ChainState {
  CUfunction add1 = nullptr, add1_store2 = nullptr;
  CUstream stream = nullptr;
  CUmemoryPool pool = nullptr;
  CUdeviceptr x = 0, scratch = 0;
  size_t bytes = 0;
  unsigned grid = 0;
  long long n = 0;
  float one = 1.0f;
  Memref mx, md;
  void* params_x[7];
  void* params_d[7];
  void* params_xd[12];
};

static bool parse_count(const char* text, long long min, long long* out) {
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || value < min) return false;
  *out = value;
  return true;
}

static bool parse_chain(const char* name, Chain* out) {
  static const struct { const char* name; Chain chain; } kModes[] = {
      {"step", Chain::kStep}, {"alloc_step", Chain::kAllocStep},
      {"scratch_step", Chain::kScratchStep}, {"alloc_only_step", Chain::kAllocOnlyStep}};
  for (const auto& mode : kModes) {
    if (std::strcmp(name, mode.name) == 0) {
      *out = mode.chain;
      return true;
    }
  }
  return false;
}

// Returns 0, or 2 after printing what is wrong with the arguments.
static int parse(int argc, char** argv, Options* o) {
  if (argc < 3 || !parse_count(argv[1], 1, &o->n) || !parse_count(argv[2], 1, &o->repeats)) {
    std::fprintf(stderr,
                 "usage: %s N REPEATS [memref] [sync] [enqueue] [noop]\n"
                 "       %s N REPEATS chain=step|alloc_step|scratch_step|alloc_only_step "
                 "[elements=K] [warmup=K] [graph] [noop]\n(N and REPEATS: positive integers)\n",
                 argv[0], argv[0]);
    return 2;
  }
  for (int a = 3; a < argc; ++a) {
    const char* arg = argv[a];
    bool ok = true;
    if (std::strcmp(arg, "memref") == 0) {
      o->memref = true;
    } else if (std::strcmp(arg, "sync") == 0) {
      o->sync = true;
    } else if (std::strcmp(arg, "enqueue") == 0) {
      o->enqueue = true;
    } else if (std::strcmp(arg, "noop") == 0) {
      o->noop = true;
    } else if (std::strcmp(arg, "graph") == 0) {
      o->graph = true;
    } else if (std::strncmp(arg, "chain=", 6) == 0) {
      ok = parse_chain(arg + 6, &o->chain);
    } else if (std::strncmp(arg, "elements=", 9) == 0) {
      ok = parse_count(arg + 9, 1, &o->elements) && o->elements <= (1LL << 30);
    } else if (std::strncmp(arg, "warmup=", 7) == 0) {
      ok = parse_count(arg + 7, 0, &o->warmup);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "bad argument '%s' (expected memref, sync, enqueue, noop, graph, chain=step|"
                   "alloc_step|scratch_step|alloc_only_step, elements=K (1..2^30) or "
                   "warmup=K)\n",
                   arg);
      return 2;
    }
  }
  bool chain = o->chain != Chain::kNone;
  if (chain && (o->memref || o->sync || o->enqueue)) {
    std::fprintf(stderr, "chain=MODE takes no memref, sync or enqueue (every call waits)\n");
    return 2;
  }
  if (!chain && o->graph) {
    std::fprintf(stderr, "graph is for chain=MODE only\n");
    return 2;
  }
  if (!chain && o->elements != 4096) {
    std::fprintf(stderr, "elements=K is for chain=MODE only (launch loops use 32 counters)\n");
    return 2;
  }
  if (o->warmup < 0) o->warmup = chain ? 200 : 100;
  // counters are floats: every count up to 2^24 is exact
  if (o->warmup + o->n * o->repeats > (1LL << 24)) {
    std::fprintf(stderr, "too many launches to count exactly in floats (max 2^24)\n");
    return 2;
  }
  return 0;
}

static int make_context(CUdevice* dev) {
  CUcontext ctx;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, *dev));
  CHECK(cuCtxSetCurrent(ctx));
  return 0;
}

// Reads `count` floats at `ptr` back; returns 0 when each equals `expected`, else 3.
static int verify(CUdeviceptr ptr, long long count, long long expected, const char* what) {
  std::vector<float> got(static_cast<size_t>(count));
  CHECK(cuMemcpyDtoH(got.data(), ptr, got.size() * sizeof(float)));
  for (long long i = 0; i < count; ++i) {
    if (got[static_cast<size_t>(i)] != static_cast<float>(expected)) {
      std::fprintf(stderr, "WRONG: %s %lld is %g, expected %lld\n", what, i,
                   static_cast<double>(got[static_cast<size_t>(i)]), expected);
      return 3;
    }
  }
  return 0;
}

static int launch_loop(const Options& o, CUmodule mod) {
  CUfunction fn;
  CUstream stream;
  CUdeviceptr x;
  CHECK(cuModuleGetFunction(&fn, mod, o.memref ? "add1_memref" : "add1"));
  CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&x, 32 * sizeof(float)));
  CHECK(cuMemsetD32(x, 0, 32));
  long long offset = 0, size = 32, stride = 1;
  void* one[] = {&x};
  void* five[] = {&x, &x, &offset, &size, &stride};
  void** params = o.memref ? five : one;
  for (long long warm = 0; warm < o.warmup; ++warm) {
    if (!o.noop) CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
  }
  CHECK(cuStreamSynchronize(stream));
  for (long long r = 0; r < o.repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (long long i = 0; i < o.n; ++i) {
      if (!o.noop) CHECK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr));
      if (o.sync) CHECK(cuStreamSynchronize(stream));
    }
    auto enqueued = std::chrono::steady_clock::now();
    CHECK(cuStreamSynchronize(stream));
    auto end = o.enqueue ? enqueued : std::chrono::steady_clock::now();
    std::chrono::duration<double, std::micro> us = end - start;
    std::printf("%.4f\n", us.count() / static_cast<double>(o.n));
  }
  return verify(x, 32, o.warmup + o.n * o.repeats, "counter");
}

// The pool alloc_step and alloc_only_step allocate from: device memory whose release threshold
// is UINT64_MAX, so freed memory stays reserved for the next allocation (Nova's pool).
static int make_pool(CUdevice dev, CUmemoryPool* pool) {
  int supported = 0;
  CHECK(cuDeviceGetAttribute(&supported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, dev));
  if (!supported) {
    std::fprintf(stderr, "device 0 has no stream-ordered memory pools\n");
    return 1;
  }
  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  CHECK(cuMemPoolCreate(pool, &props));
  cuuint64_t threshold = UINT64_MAX;
  CHECK(cuMemPoolSetAttribute(*pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  return 0;
}

static void bind_memref(Memref* m, void** slots) {
  slots[0] = &m->allocated;
  slots[1] = &m->aligned;
  slots[2] = &m->offset;
  slots[3] = &m->size;
  slots[4] = &m->stride;
}

static int setup_chain(const Options& o, CUdevice dev, CUmodule mod, ChainState* s) {
  CHECK(cuModuleGetFunction(&s->add1, mod, "chain_add1"));
  CHECK(cuModuleGetFunction(&s->add1_store2, mod, "chain_add1_store2"));
  CHECK(cuStreamCreate(&s->stream, CU_STREAM_NON_BLOCKING));
  s->n = o.elements;
  s->bytes = static_cast<size_t>(o.elements) * sizeof(float);
  s->grid = static_cast<unsigned>((o.elements + 255) / 256);
  CHECK(cuMemAlloc(&s->x, s->bytes));
  CHECK(cuMemsetD32(s->x, 0, static_cast<size_t>(o.elements)));
  if (o.chain == Chain::kScratchStep) CHECK(cuMemAlloc(&s->scratch, s->bytes));
  if (o.chain == Chain::kAllocStep || o.chain == Chain::kAllocOnlyStep) {
    int failed = make_pool(dev, &s->pool);
    if (failed) return failed;
  }
  s->mx.allocated = s->mx.aligned = s->x;
  s->mx.size = s->md.size = o.elements;
  // (index n, memref, f32 one) and (n, memref x, one, memref d)
  s->params_x[0] = s->params_d[0] = s->params_xd[0] = &s->n;
  bind_memref(&s->mx, s->params_x + 1);
  bind_memref(&s->md, s->params_d + 1);
  bind_memref(&s->mx, s->params_xd + 1);
  s->params_x[6] = s->params_d[6] = s->params_xd[6] = &s->one;
  bind_memref(&s->md, s->params_xd + 7);
  return 0;
}

static CUresult launch(const ChainState& s, CUfunction fn, void** params, bool noop) {
  if (noop) return CUDA_SUCCESS;
  return cuLaunchKernel(fn, s.grid, 1, 1, 256, 1, 1, 0, s.stream, params, nullptr);
}

// The operations of one call of the chain `mode` (see the header), before its wait; `captured`:
// they are being captured into a graph (the allocation is then a graph memory node).
static int chain_ops(ChainState& s, Chain mode, bool noop, bool captured) {
  if (mode == Chain::kStep) {
    CHECK(launch(s, s.add1, s.params_x, noop));
    return 0;
  }
  bool allocates = mode != Chain::kScratchStep;
  CUdeviceptr d = s.scratch;
  if (allocates && captured) CHECK(cuMemAllocAsync(&d, s.bytes, s.stream));
  if (allocates && !captured) CHECK(cuMemAllocFromPoolAsync(&d, s.bytes, s.pool, s.stream));
  s.md.allocated = s.md.aligned = d;  // read by cuLaunchKernel below
  if (mode == Chain::kAllocOnlyStep) {
    CHECK(launch(s, s.add1_store2, s.params_xd, noop));
  } else {
    CHECK(cuMemcpyAsync(d, s.x, s.bytes, s.stream));
    CHECK(launch(s, s.add1, s.params_d, noop));
    CHECK(cuMemcpyAsync(s.x, d, s.bytes, s.stream));
  }
  if (allocates) CHECK(cuMemFreeAsync(d, s.stream));
  return 0;
}

// One call: the chain's operations (or its graph's launch), then the wait.
static int chain_call(ChainState& s, Chain mode, bool noop, CUgraphExec exec) {
  if (exec != nullptr) {
    CHECK(cuGraphLaunch(exec, s.stream));
  } else {
    int failed = chain_ops(s, mode, noop, false);
    if (failed) return failed;
  }
  CHECK(cuStreamSynchronize(s.stream));
  return 0;
}

// Capture one call's operations into a graph and instantiate it.
static int capture_chain(ChainState& s, Chain mode, bool noop, CUgraphExec* exec) {
  CHECK(cuStreamBeginCapture(s.stream, CU_STREAM_CAPTURE_MODE_RELAXED));
  int failed = chain_ops(s, mode, noop, true);
  CUgraph graph = nullptr;
  CUresult ended = cuStreamEndCapture(s.stream, &graph);
  if (failed) return failed;
  CHECK(ended);
  CHECK(cuGraphInstantiate(exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
  CHECK(cuGraphDestroy(graph));
  return 0;
}

static int chain_loop(const Options& o, CUdevice dev, CUmodule mod) {
  ChainState s;
  int failed = setup_chain(o, dev, mod, &s);
  if (failed) return failed;
  CUgraphExec exec = nullptr;
  if (o.graph) {
    failed = capture_chain(s, o.chain, o.noop, &exec);
    if (failed) return failed;
  }
  for (long long warm = 0; warm < o.warmup; ++warm) {
    failed = chain_call(s, o.chain, o.noop, exec);
    if (failed) return failed;
  }
  for (long long r = 0; r < o.repeats; ++r) {
    auto start = std::chrono::steady_clock::now();
    for (long long i = 0; i < o.n; ++i) {
      failed = chain_call(s, o.chain, o.noop, exec);
      if (failed) return failed;
    }
    std::chrono::duration<double, std::micro> us = std::chrono::steady_clock::now() - start;
    std::printf("%.4f\n", us.count() / static_cast<double>(o.n));
  }
  return verify(s.x, o.elements, o.warmup + o.n * o.repeats, "x element");
}

int main(int argc, char** argv) {
  Options o;
  int bad = parse(argc, argv, &o);
  if (bad) return bad;
  CUdevice dev;
  CUmodule mod;
  int failed = make_context(&dev);
  if (failed) return failed;
  CHECK(cuModuleLoadData(&mod, kPtx));
  return o.chain == Chain::kNone ? launch_loop(o, mod) : chain_loop(o, dev, mod);
}
