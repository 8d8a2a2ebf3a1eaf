// The GPU peers of histopipe's benchmark: CUB and NPP on the same inputs as histopipe-bench
// (the raw files it writes), timed the same way (CUDA events between back-to-back runs queued
// behind a spin kernel, runs rotating among input sets that overflow L2), printing the same JSON
// lines. Built and run on the GPU machine by scripts/bench/run:
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o peers scripts/bench/peers.cu \
//        -lnppc -lnppig -lnppif -lnppist -lnppial -lnppidei -lnppicc
//   peers --dir D --sizes 640x651,... [--content real,random] [--ops histogram,equalize,...]
//         [--quick] [--angle 30] [--low 50] [--high 150] [--hough-threshold 200]
//
// ops: histogram (CUB HistogramEven, NPP HistogramEven: 256 bins over 0..255), equalize (NPP
// HistogramEven + a 256-thread LUT kernel (OpenCV's equalizeHist formula) + NPP LUTPalette),
// rotate (NPP Rotate about the centre, nearest and linear), pad (NPP CopyConstBorder to the
// diagonal), edges (NPP FilterCannyBorder, Sobel 3x3, L1, replicated border), hough (NPP
// FilterHoughLine on the OpenCV Canny edge map edges-*.u8; rho step 1 px, theta step 1 degree),
// copy (cudaMemcpy of the frame, to compare with histopipe-bench's own copy).
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <npp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#define CUDA(x) check_cuda((x), #x, __LINE__)
#define NPP(x) check_npp((x), #x, __LINE__)

// A failed call ends the current op (see guard), not the program: the other peers still run.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

static void check_cuda(cudaError_t e, const char* what, int line) {
  if (e != cudaSuccess) {
    throw Failure("line " + std::to_string(line) + ": " + what + ": " + cudaGetErrorString(e));
  }
}

static void check_npp(NppStatus s, const char* what, int line) {
  if (s < 0) throw Failure("line " + std::to_string(line) + ": " + what + ": NPP error " + std::to_string((int)s));
  if (s > 0) {
    static int warned = 0;
    if (!warned++) fprintf(stderr, "peers: line %d: %s: NPP warning %d\n", line, what, (int)s);
  }
}

// ---- options -------------------------------------------------------------------------------

struct Options {
  std::string dir = "bench-inputs";
  std::vector<std::pair<int, int>> sizes;
  std::vector<std::string> contents = {"real", "random"};
  std::vector<std::string> ops = {"copy", "histogram", "equalize", "rotate", "pad", "edges", "hough"};
  bool quick = false;
  double angle = 30.0;
  int low = 50, high = 150, hough_threshold = 200, hough_max_lines = 4096;
};

static std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        fprintf(stderr, "peers: %s needs a value\n", a.c_str());
        exit(2);
      }
      return argv[++i];
    };
    if (a == "--dir") o.dir = value();
    else if (a == "--sizes") {
      o.sizes.clear();
      for (auto& s : split(value())) {
        int w, h;
        if (sscanf(s.c_str(), "%dx%d", &w, &h) != 2) {
          fprintf(stderr, "peers: bad size '%s'\n", s.c_str());
          exit(2);
        }
        o.sizes.push_back({w, h});
      }
    } else if (a == "--content") o.contents = split(value());
    else if (a == "--ops") o.ops = split(value());
    else if (a == "--quick") o.quick = true;
    else if (a == "--angle") o.angle = atof(value().c_str());
    else if (a == "--low") o.low = atoi(value().c_str());
    else if (a == "--high") o.high = atoi(value().c_str());
    else if (a == "--hough-threshold") o.hough_threshold = atoi(value().c_str());
    else if (a == "--hough-max-lines") o.hough_max_lines = atoi(value().c_str());
    else {
      fprintf(stderr, "peers: unknown option '%s'\n", a.c_str());
      exit(2);
    }
  }
  if (o.sizes.empty()) o.sizes = {{640, 651}, {2560, 1707}, {3932, 4000}, {4096, 3112}, {7680, 4320}, {16384, 16384}};
  return o;
}

// ---- timing (the method of crates/bench/src/timing.rs) -------------------------------------

__global__ void spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

struct Stats {
  double median, min, p90;
  int runs;
  double queue_us;  // host time to queue one run
};

static Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  Stats s;
  s.runs = (int)n;
  s.min = v[0];
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  s.p90 = v[(size_t)std::lround((n - 1) * 0.9)];
  s.queue_us = 0;
  return s;
}

static const int BATCH = 50;

struct Timer {
  cudaStream_t stream;
  cudaEvent_t ev[BATCH + 1];
  int warmup, min_runs, max_runs;
  double budget_ms;

  Timer(cudaStream_t s, bool quick) : stream(s) {
    for (auto& e : ev) CUDA(cudaEventCreate(&e));
    warmup = quick ? 2 : 3;
    min_runs = quick ? 5 : 10;
    max_runs = quick ? 50 : 200;
    budget_ms = quick ? 60 : 300;
  }

  // As crates/bench/src/timing.rs: each batch spins at least twice as long as the host took to
  // queue the previous one (scaled to a full batch), so the GPU never waits for the host.
  unsigned long long spin_ns = 1500000ull;
  double queue_ns = 0;

  std::vector<double> batch(long& i, int n, const std::function<void(long)>& run) {
    spin<<<1, 1, 0, stream>>>(spin_ns);
    CUDA(cudaEventRecord(ev[0], stream));
    auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < n; k++) {
      run(i++);
      CUDA(cudaEventRecord(ev[k + 1], stream));
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    queue_ns += ns;
    spin_ns = std::min(100000000ull, std::max(spin_ns, (unsigned long long)(2 * ns * BATCH / n)));
    CUDA(cudaStreamSynchronize(stream));
    CUDA(cudaGetLastError());
    std::vector<double> out;
    for (int k = 0; k < n; k++) {
      float ms;
      CUDA(cudaEventElapsedTime(&ms, ev[k], ev[k + 1]));
      out.push_back(ms);
    }
    return out;
  }

  Stats time(const std::function<void(long)>& run) {
    long i = 0;
    for (int k = 0; k < warmup; k++) run(i++);
    CUDA(cudaStreamSynchronize(stream));
    CUDA(cudaGetLastError());
    double est = stats_of(batch(i, 3, run)).median;
    queue_ns = 0;
    int runs = (int)std::min<double>(max_runs, std::max<double>(min_runs, budget_ms / std::max(est, 1e-4)));
    if (est > 250) runs = 3;  // slow cases (dense 16K^2 Hough): as timing.rs
    std::vector<double> samples;
    while ((int)samples.size() < runs) {
      auto b = batch(i, std::min(BATCH, runs - (int)samples.size()), run);
      samples.insert(samples.end(), b.begin(), b.end());
    }
    Stats s = stats_of(samples);
    s.queue_us = queue_ns / 1e3 / s.runs;
    return s;
  }
};

// Sets that together overflow L2 several times (as crates/bench/src/registry.rs).
static int set_count(size_t bytes_per_set) {
  size_t k = ((size_t)256 << 20) / std::max<size_t>(bytes_per_set, 1) + 1;
  return (int)std::min<size_t>(std::max<size_t>(k, 1), 256);
}

static void emit(const char* op, const char* impl, const std::string& content, int w, int h, const Stats& s,
                 const std::string& extra = "") {
  printf("{\"suite\":\"kernel\",\"op\":\"%s\",\"impl\":\"%s\",\"content\":\"%s\",\"width\":%d,\"height\":%d,"
         "\"median_ms\":%.6f,\"min_ms\":%.6f,\"p90_ms\":%.6f,\"runs\":%d,\"queue_us\":%.3f%s%s}\n",
         op, impl, content.c_str(), w, h, s.median, s.min, s.p90, s.runs, s.queue_us, extra.empty() ? "" : ",",
         extra.c_str());
  fflush(stdout);
}

// ---- inputs --------------------------------------------------------------------------------

static bool read_raw(const std::string& path, size_t n, std::vector<unsigned char>& out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return false;
  out.resize(n);
  size_t got = fread(out.data(), 1, n, f);
  fclose(f);
  return got == n;
}

// K device copies of one frame, and K outputs.
struct Sets {
  std::vector<unsigned char*> in, out;
  Sets(const std::vector<unsigned char>& host, size_t out_bytes, cudaStream_t s) {
    int k = set_count(host.size() + out_bytes);
    for (int i = 0; i < k; i++) {
      unsigned char *a, *b;
      CUDA(cudaMalloc(&a, host.size()));
      CUDA(cudaMalloc(&b, std::max<size_t>(out_bytes, 1)));
      if (i == 0) CUDA(cudaMemcpy(a, host.data(), host.size(), cudaMemcpyHostToDevice));
      else CUDA(cudaMemcpyAsync(a, in[0], host.size(), cudaMemcpyDeviceToDevice, s));
      CUDA(cudaMemsetAsync(b, 0, std::max<size_t>(out_bytes, 1), s));
      in.push_back(a);
      out.push_back(b);
    }
    CUDA(cudaStreamSynchronize(s));
  }
  ~Sets() {
    for (auto p : in) cudaFree(p);
    for (auto p : out) cudaFree(p);
  }
  int count() const { return (int)in.size(); }
};

// OpenCV's equalizeHist LUT from a 256-bin histogram: lut[v] = round(255 * (cdf(v) - cdf(i0)) /
// (total - cdf(i0))) for v > i0, the first non-empty bin i0 mapping to 0; a constant image maps to
// itself.
__global__ void equalize_lut(const int* hist, unsigned char* lut) {
  __shared__ int cdf[256];
  __shared__ int first;
  int t = threadIdx.x;
  int h = hist[t];
  cdf[t] = h;
  if (t == 0) first = 256;
  __syncthreads();
  if (h) atomicMin(&first, t);
  for (int off = 1; off < 256; off <<= 1) {
    int v = t >= off ? cdf[t - off] : 0;
    __syncthreads();
    cdf[t] += v;
    __syncthreads();
  }
  int total = cdf[255];
  int i0 = first;
  int base = cdf[i0];
  if (base == total) {
    lut[t] = (unsigned char)i0;
    return;
  }
  float scale = 255.0f / (float)(total - base);
  lut[t] = t <= i0 ? 0 : (unsigned char)min(255, __float2int_rn((float)(cdf[t] - base) * scale));
}

static NppStreamContext npp_context(cudaStream_t s) {
  NppStreamContext c;
  memset(&c, 0, sizeof c);
  int dev;
  CUDA(cudaGetDevice(&dev));
  cudaDeviceProp p;
  CUDA(cudaGetDeviceProperties(&p, dev));
  c.hStream = s;
  c.nCudaDeviceId = dev;
  c.nMultiProcessorCount = p.multiProcessorCount;
  c.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
  c.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
  c.nSharedMemPerBlock = p.sharedMemPerBlock;
  c.nCudaDevAttrComputeCapabilityMajor = p.major;
  c.nCudaDevAttrComputeCapabilityMinor = p.minor;
  CUDA(cudaStreamGetFlags(s, &c.nStreamFlags));
  return c;
}

static long ceil_sqrt(long n) {
  long r = (long)std::sqrt((double)n);
  while (r * r > n) r--;
  while (r * r < n) r++;
  return r;
}

// Runs one op's block; a failure is reported and the next op runs. Device memory the block had
// not freed yet stays allocated (a few buffers at most).
static int failures = 0;
static void guard(const char* op, const std::function<void()>& block) {
  try {
    block();
  } catch (const Failure& f) {
    fprintf(stderr, "peers: %s: %s\n", op, f.what());
    failures++;
    cudaGetLastError();  // clear a non-sticky error
  }
}

// ---- the peers -----------------------------------------------------------------------------

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  cudaStream_t stream;
  CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  NppStreamContext ctx = npp_context(stream);
  Timer timer(stream, o.quick);
  {
    cudaDeviceProp p;
    CUDA(cudaGetDeviceProperties(&p, 0));
    int driver = 0, runtime = 0;
    CUDA(cudaDriverGetVersion(&driver));
    CUDA(cudaRuntimeGetVersion(&runtime));
    const NppLibraryVersion* v = nppGetLibVersion();
    printf("{\"suite\":\"device\",\"impl\":\"peers\",\"name\":\"%s\",\"l2_bytes\":%d,\"sms\":%d,\"cuda_driver\":%d,"
           "\"cuda_runtime\":%d,\"npp\":\"%d.%d.%d\",\"cub\":%d}\n",
           p.name, p.l2CacheSize, p.multiProcessorCount, driver, runtime, v->major, v->minor, v->build, CUB_VERSION);
  }
  auto wants = [&](const char* op) { return std::find(o.ops.begin(), o.ops.end(), op) != o.ops.end(); };

  std::vector<unsigned char> host;
  for (auto size : o.sizes) {
    const int w = size.first, h = size.second;
    for (auto& content : o.contents) {
      size_t n = (size_t)w * h;
      std::string path = o.dir + "/" + content + "-" + std::to_string(w) + "x" + std::to_string(h) + ".u8";
      if (!read_raw(path, n, host)) {
        fprintf(stderr, "peers: %s: missing or short, skipped\n", path.c_str());
        continue;
      }
      NppiSize roi = {w, h};

      if (wants("copy")) guard("copy", [&] {
        Sets sets(host, n, stream);
        Stats s = timer.time([&](long i) {
          int k = i % sets.count();
          CUDA(cudaMemcpyAsync(sets.out[k], sets.in[k], n, cudaMemcpyDeviceToDevice, stream));
        });
        emit("copy.frame", "cuda", content, w, h, s, "\"copy_bytes\":" + std::to_string(n));
      });

      if (wants("histogram") || wants("equalize")) guard("histogram/equalize", [&] {
        Sets sets(host, n, stream);
        int* hist;
        unsigned char* lut;
        CUDA(cudaMalloc(&hist, 256 * sizeof(int)));
        CUDA(cudaMalloc(&lut, 256));
        size_t cub_bytes = 0;
        CUDA(cub::DeviceHistogram::HistogramEven((void*)nullptr, cub_bytes, sets.in[0], hist, 257, 0, 256, (int)n,
                                                 stream));
        void* cub_temp;
        CUDA(cudaMalloc(&cub_temp, std::max<size_t>(cub_bytes, 1)));
        size_t npp_bytes = 0;
        NPP(nppiHistogramEvenGetBufferSize_8u_C1R_Ctx(roi, 257, &npp_bytes, ctx));
        Npp8u* npp_buf;
        CUDA(cudaMalloc(&npp_buf, std::max<size_t>(npp_bytes, 1)));
        auto npp_hist = [&](long i) {
          NPP(nppiHistogramEven_8u_C1R_Ctx(sets.in[i % sets.count()], w, roi, hist, 257, 0, 256, npp_buf, ctx));
        };
        if (wants("histogram")) {
          Stats s = timer.time([&](long i) {
            CUDA(cub::DeviceHistogram::HistogramEven(cub_temp, cub_bytes, sets.in[i % sets.count()], hist, 257, 0,
                                                     256, (int)n, stream));
          });
          emit("histogram", "cub", content, w, h, s);
          emit("histogram", "npp", content, w, h, timer.time(npp_hist));
        }
        if (wants("equalize")) {
          Stats s = timer.time([&](long i) {
            npp_hist(i);
            equalize_lut<<<1, 256, 0, stream>>>(hist, lut);
            int k = i % sets.count();
            NPP(nppiLUTPalette_8u_C1R_Ctx(sets.in[k], w, sets.out[k], w, roi, lut, 8, ctx));
          });
          emit("equalize", "npp", content, w, h, s);
          s = timer.time([&](long i) {
            int k = i % sets.count();
            NPP(nppiLUTPalette_8u_C1R_Ctx(sets.in[k], w, sets.out[k], w, roi, lut, 8, ctx));
          });
          emit("equalize.map", "npp", content, w, h, s);
        }
        cudaFree(hist);
        cudaFree(lut);
        cudaFree(cub_temp);
        cudaFree(npp_buf);
      });

      if (wants("rotate")) guard("rotate", [&] {
        Sets sets(host, n, stream);
        NppiRect rect = {0, 0, w, h};
        // NPP rotates about the origin, then shifts: shift the centre back onto itself. The
        // rotated quad's centroid is where the centre went, whatever NPP's sign convention.
        double quad[4][2];
        NPP(nppiGetRotateQuad(rect, quad, o.angle, 0, 0));
        double cx = 0, cy = 0;
        for (auto& q : quad) cx += q[0] / 4, cy += q[1] / 4;
        double sx = w / 2.0 - cx, sy = h / 2.0 - cy;
        const std::pair<const char*, int> modes[] = {{"rotate.nearest", NPPI_INTER_NN},
                                                     {"rotate.bilinear", NPPI_INTER_LINEAR}};
        for (auto mode : modes) {
          const char* name = mode.first;
          const int interp = mode.second;
          Stats s = timer.time([&](long i) {
            int k = i % sets.count();
            NPP(nppiRotate_8u_C1R_Ctx(sets.in[k], roi, w, rect, sets.out[k], w, rect, o.angle, sx, sy, interp, ctx));
          });
          emit(name, "npp", content, w, h, s);
        }
      });

      if (wants("pad")) guard("pad", [&] {
        long d = ceil_sqrt((long)w * w + (long)h * h);
        if (d * d <= (1L << 31)) {
          size_t out = (size_t)d * d;
          Sets sets(host, out, stream);
          NppiSize droi = {(int)d, (int)d};
          int top = (int)((d - h) / 2), left = (int)((d - w) / 2);
          Stats s = timer.time([&](long i) {
            int k = i % sets.count();
            NPP(nppiCopyConstBorder_8u_C1R_Ctx(sets.in[k], w, roi, sets.out[k], (int)d, droi, top, left, 0, ctx));
          });
          emit("pad", "npp", content, w, h, s);
        }
      });

      if (wants("edges")) guard("edges", [&] {
        Sets sets(host, n, stream);
        int bytes = 0;
        NPP(nppiFilterCannyBorderGetBufferSize(roi, &bytes));
        Npp8u* buf;
        CUDA(cudaMalloc(&buf, std::max(bytes, 1)));
        NppiPoint origin = {0, 0};
        Stats s = timer.time([&](long i) {
          int k = i % sets.count();
          NPP(nppiFilterCannyBorder_8u_C1R_Ctx(sets.in[k], w, roi, origin, sets.out[k], w, roi, NPP_FILTER_SOBEL,
                                               NPP_MASK_SIZE_3_X_3, (Npp16s)o.low, (Npp16s)o.high, nppiNormL1,
                                               NPP_BORDER_REPLICATE, buf, ctx));
        });
        emit("edges", "npp", content, w, h, s);
        cudaFree(buf);
      });

      if (wants("hough")) guard("hough", [&] {
        std::vector<unsigned char> edges;
        std::string epath = o.dir + "/edges-" + content + "-" + std::to_string(w) + "x" + std::to_string(h) + ".u8";
        if (!read_raw(epath, n, edges)) {
          fprintf(stderr, "peers: %s: missing, hough skipped\n", epath.c_str());
        } else {
          size_t on = 0;
          for (auto v : edges) on += v != 0;
          Sets sets(edges, 0, stream);
          NppPointPolar delta = {1.0f, 1.0f};  // rho 1 pixel, theta 1 degree
          int bytes = 0;
          NPP(nppiFilterHoughLineGetBufferSize(roi, delta, o.hough_max_lines, &bytes));
          Npp8u* buf;
          NppPointPolar* lines;
          int* count;
          CUDA(cudaMalloc(&buf, std::max(bytes, 1)));
          CUDA(cudaMalloc(&lines, sizeof(NppPointPolar) * o.hough_max_lines));
          CUDA(cudaMalloc(&count, sizeof(int)));
          Stats s = timer.time([&](long i) {
            NPP(nppiFilterHoughLine_8u32f_C1R_Ctx(sets.in[i % sets.count()], w, roi, delta, o.hough_threshold, lines,
                                                  o.hough_max_lines, count, buf, ctx));
          });
          int found = 0;
          CUDA(cudaMemcpy(&found, count, sizeof(int), cudaMemcpyDeviceToHost));
          char extra[160];
          snprintf(extra, sizeof extra, "\"edge_fraction\":%.5f,\"lines\":%d,\"threshold\":%d", (double)on / n, found,
                   o.hough_threshold);
          emit("hough", "npp", content, w, h, s, extra);
          cudaFree(buf);
          cudaFree(lines);
          cudaFree(count);
        }
      });
    }
  }
  return failures ? 1 : 0;
}
