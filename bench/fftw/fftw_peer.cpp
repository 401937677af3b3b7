// FFTW peer of Backplane's FFT benchmark row `physics.fft1d` (src/bench/workloads.cpp): the same
// transform (forward, unnormalised, complex 65536), the same inputs, byte and FLOP counts. FFTW is
// GPL, so this is a separate program: it uses no Backplane header or library, and Backplane never
// links FFTW. See bench/fftw/README.md.
#include <fftw3.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <string>
#include <vector>

namespace {

[[noreturn]] void Fail(const std::string& why) {
  std::fprintf(stderr, "fftw_peer: %s\n", why.c_str());
  std::exit(1);
}

// ---- Inputs: Backplane's Random(n, seed) (bench_data.hpp), uniform in [-4, 4) from Philox4x32-10
// as in include/backplane/random.hpp, copied so that the values are bit for bit the same.

using Counter = std::array<uint32_t, 4>;

uint32_t PhiloxWord0(uint64_t seed, uint64_t stream, uint64_t index) {
  Counter c = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), static_cast<uint32_t>(stream),
               static_cast<uint32_t>(stream >> 32)};
  std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<uint32_t>(p0)};
    key = {key[0] + 0x9E3779B9u, key[1] + 0xBB67AE85u};
  }
  return c[0];
}

std::vector<float> Random(int64_t n, uint64_t seed, float lo = -4, float hi = 4) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float u = static_cast<float>(PhiloxWord0(seed, 0, static_cast<uint64_t>(i)) >> 8) * 0x1.0p-24f;
    v[static_cast<size_t>(i)] = lo + (hi - lo) * u;
  }
  return v;
}

// ---- FFTW in either precision.

template <class T>
struct Fftw;

template <>
struct Fftw<float> {
  using Plan = fftwf_plan;
  using Complex = fftwf_complex;
  static void* Malloc(size_t bytes) { return fftwf_malloc(bytes); }
  static void Free(void* p) { fftwf_free(p); }
  static void SetThreads(int t) { fftwf_plan_with_nthreads(t); }
  static Plan Split(int n, float* ri, float* ii, float* ro, float* io, unsigned flags) {
    fftwf_iodim dim{n, 1, 1};
    return fftwf_plan_guru_split_dft(1, &dim, 0, nullptr, ri, ii, ro, io, flags);
  }
  static Plan Interleaved(int n, float* in, float* out, unsigned flags) {
    return fftwf_plan_dft_1d(n, reinterpret_cast<Complex*>(in), reinterpret_cast<Complex*>(out), FFTW_FORWARD, flags);
  }
  static void Execute(Plan p) { fftwf_execute(p); }
  static void Destroy(Plan p) { fftwf_destroy_plan(p); }
};

template <>
struct Fftw<double> {
  using Plan = fftw_plan;
  using Complex = fftw_complex;
  static void* Malloc(size_t bytes) { return fftw_malloc(bytes); }
  static void Free(void* p) { fftw_free(p); }
  static void SetThreads(int t) { fftw_plan_with_nthreads(t); }
  static Plan Split(int n, double* ri, double* ii, double* ro, double* io, unsigned flags) {
    fftw_iodim dim{n, 1, 1};
    return fftw_plan_guru_split_dft(1, &dim, 0, nullptr, ri, ii, ro, io, flags);
  }
  static Plan Interleaved(int n, double* in, double* out, unsigned flags) {
    return fftw_plan_dft_1d(n, reinterpret_cast<Complex*>(in), reinterpret_cast<Complex*>(out), FFTW_FORWARD, flags);
  }
  static void Execute(Plan p) { fftw_execute(p); }
  static void Destroy(Plan p) { fftw_destroy_plan(p); }
};

// `count` elements from fftw(f)_malloc, the start rounded up to 64 bytes (fftw_malloc itself only
// promises the SIMD alignment FFTW was built for).
template <class T>
class Buffer {
 public:
  explicit Buffer(size_t count) : raw_(Fftw<T>::Malloc(count * sizeof(T) + 64)) {
    if (raw_ == nullptr) Fail("fftw_malloc failed");
    const auto addr = reinterpret_cast<uintptr_t>(raw_);
    data_ = reinterpret_cast<T*>((addr + 63) & ~uintptr_t{63});
    std::memset(static_cast<void*>(data_), 0, count * sizeof(T));
  }
  ~Buffer() { Fftw<T>::Free(raw_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* get() const { return data_; }

 private:
  void* raw_;
  T* data_ = nullptr;
};

enum class Layout { kSplit, kInterleaved };

// One out-of-place forward transform of length n with its buffers and plan. Split: separate real
// and imaginary arrays in and out (the layout of Backplane's Physics.FFT1D); interleaved: FFTW's
// native fftw_complex arrays.
template <class T>
class Transform {
 public:
  Transform(int n, Layout layout, int threads, unsigned flags)
      : n_(n), layout_(layout), in_(2 * static_cast<size_t>(n)), out_(2 * static_cast<size_t>(n)) {
    Fftw<T>::SetThreads(threads);
    // The planner (FFTW_MEASURE and up) overwrites the arrays; the inputs are filled afterwards.
    plan_ = layout == Layout::kSplit ? Fftw<T>::Split(n, in_.get(), in_.get() + n, out_.get(), out_.get() + n, flags)
                                     : Fftw<T>::Interleaved(n, in_.get(), out_.get(), flags);
    if (plan_ == nullptr) Fail("FFTW could not create a plan for n = " + std::to_string(n));
  }
  ~Transform() { Fftw<T>::Destroy(plan_); }
  Transform(const Transform&) = delete;
  Transform& operator=(const Transform&) = delete;

  void Fill(const std::vector<float>& re, const std::vector<float>& im) {
    for (int i = 0; i < n_; ++i) {
      const auto u = static_cast<size_t>(i);
      if (layout_ == Layout::kSplit) {
        in_.get()[u] = static_cast<T>(re[u]);
        in_.get()[n_ + u] = static_cast<T>(im[u]);
      } else {
        in_.get()[2 * u] = static_cast<T>(re[u]);
        in_.get()[2 * u + 1] = static_cast<T>(im[u]);
      }
    }
  }
  void Run() { Fftw<T>::Execute(plan_); }
  std::complex<double> Out(int k) const {
    const auto u = static_cast<size_t>(k);
    return layout_ == Layout::kSplit ? std::complex<double>(out_.get()[u], out_.get()[n_ + u])
                                     : std::complex<double>(out_.get()[2 * u], out_.get()[2 * u + 1]);
  }

 private:
  int n_;
  Layout layout_;
  Buffer<T> in_, out_;
  typename Fftw<T>::Plan plan_ = nullptr;
};

// X_k = sum_j x_j exp(-2 pi i j k / n) in double (FFTW_FORWARD, Backplane's FFT1D sign).
std::complex<double> NaiveBin(const std::vector<float>& re, const std::vector<float>& im, int k) {
  const auto n = static_cast<int64_t>(re.size());
  std::complex<double> s = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double angle = -2.0 * std::numbers::pi * static_cast<double>((j * k) % n) / static_cast<double>(n);
    s += std::complex<double>(re[static_cast<size_t>(j)], im[static_cast<size_t>(j)]) *
         std::complex<double>(std::cos(angle), std::sin(angle));
  }
  return s;
}

// ---- Problems: the Backplane row and its variants.

struct Problem {
  std::string name;   // row name: peer.fftw_<name>
  std::string shape;  // size label (the Backplane row's for the f32 rows)
  int n;
  bool f64;
  Layout layout;
  double bytes;  // per call, the Backplane row's convention: inputs read + outputs written
  double flops;  // per call, 5 n log2 n as the Backplane row
};

std::vector<Problem> Problems() {
  constexpr int n = 65536;
  const double flops = 5.0 * n * std::log2(static_cast<double>(n));  // = 5.0 * 65536 * 16
  return {
      {"fft1d", "complex 65536", n, false, Layout::kSplit, 16.0 * n, flops},
      {"fft1d_interleaved", "complex 65536", n, false, Layout::kInterleaved, 16.0 * n, flops},
      // Backplane computes its f32 FFT in f64 lanes; this is FFTW at that precision (f64 data).
      {"fft1d_f64", "complex 65536 f64", n, true, Layout::kSplit, 32.0 * n, flops},
  };
}

// Relative error of transforms of a small size against the naive DFT (all bins), and of the timed
// size on a few bins (relative to rms |X_k| = ||x||_2 by Parseval). Exits on failure.
template <class T>
void CheckAgainstNaive(Transform<T>& t, const std::vector<float>& re, const std::vector<float>& im,
                       const std::vector<int>& bins, const std::string& what, bool full) {
  double err2 = 0, ref2 = 0, max_err = 0;
  for (const int k : bins) {
    const std::complex<double> want = NaiveBin(re, im, k);
    const double e = std::abs(t.Out(k) - want);
    err2 += e * e;
    ref2 += std::norm(want);
    max_err = std::max(max_err, e);
  }
  double rel;
  if (full) {
    rel = std::sqrt(err2 / ref2);
  } else {
    double x2 = 0;
    for (size_t j = 0; j < re.size(); ++j) x2 += double{re[j]} * re[j] + double{im[j]} * im[j];
    rel = max_err / std::sqrt(x2);
  }
  if (!(rel <= 1e-4)) {
    char msg[256];
    std::snprintf(msg, sizeof msg, "self-check failed: %s, relative error %.3g > 1e-4 against the naive DFT",
                  what.c_str(), rel);
    Fail(msg);
  }
}

template <class T>
void SelfCheckSmall(const Problem& p, int threads, unsigned flags) {
  constexpr int kSmall = 256;
  const std::vector<float> re = Random(kSmall, 1), im = Random(kSmall, 2);
  Transform<T> t(kSmall, p.layout, threads, flags);
  t.Fill(re, im);
  t.Run();
  std::vector<int> bins(kSmall);
  for (int k = 0; k < kSmall; ++k) bins[static_cast<size_t>(k)] = k;
  CheckAgainstNaive(t, re, im, bins, p.name + " n=256 threads=" + std::to_string(threads), true);
}

struct Timing {
  double median = 0, best = 0;  // seconds per call
  int batches = 0, calls_per_batch = 0;
};

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Warm-up, then batches of calls (each batch >= min_time / 20) until min_time has passed and at
// least 5 batches ran; per-call time of each batch, median and best.
template <class F>
Timing Time(F&& call, double min_time) {
  call();
  call();
  const double target = std::max(min_time / 20, 1e-4);
  int reps = 1;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) call();
    if (Seconds(t0) >= target || reps >= (1 << 20)) break;
    reps *= 2;
  }
  std::vector<double> per_call;
  double total = 0;
  while (total < min_time || per_call.size() < 5) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) call();
    const double s = Seconds(t0);
    total += s;
    per_call.push_back(s / reps);
  }
  std::sort(per_call.begin(), per_call.end());
  const size_t m = per_call.size();
  Timing t;
  t.median = m % 2 == 1 ? per_call[m / 2] : 0.5 * (per_call[m / 2 - 1] + per_call[m / 2]);
  t.best = per_call.front();
  t.batches = static_cast<int>(m);
  t.calls_per_batch = reps;
  return t;
}

struct Row {
  Problem problem;
  int threads;
  Timing timing;
};

template <class T>
Timing Measure(const Problem& p, int threads, unsigned flags, double min_time) {
  SelfCheckSmall<T>(p, threads, flags);
  const std::vector<float> re = Random(p.n, 1), im = Random(p.n, 2);  // as the Backplane row
  Transform<T> t(p.n, p.layout, threads, flags);
  t.Fill(re, im);
  const Timing timing = Time([&t] { t.Run(); }, min_time);
  std::vector<int> bins = {0, 1, 2, p.n / 2, p.n - 1};
  for (int i = 0; i < 27; ++i) bins.push_back(static_cast<int>((int64_t{i} * 40503 + 12345) % p.n));
  CheckAgainstNaive(t, re, im, bins, p.name + " n=" + std::to_string(p.n) + " threads=" + std::to_string(threads),
                    false);
  return timing;
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

void WriteJson(const std::string& path, const std::vector<Row>& rows, bool best, const char* planner) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) Fail("cannot write " + path);
  std::fprintf(f, "[\n");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const double s = best ? r.timing.best : r.timing.median;
    std::fprintf(f,
                 "  {\"op\": %s, \"shape\": %s, \"threads\": %d, \"ms\": %.6f, \"gbps\": %.4f, \"gflops\": %.4f, "
                 "\"statistic\": \"%s\", \"median_ms\": %.6f, \"best_ms\": %.6f, \"batches\": %d, "
                 "\"calls_per_batch\": %d, \"n\": %d, \"precision\": \"%s\", \"layout\": \"%s\", "
                 "\"bytes\": %.0f, \"flops\": %.0f, \"planner\": \"%s\", \"fftw\": %s}%s\n",
                 JsonString("peer.fftw_" + r.problem.name).c_str(), JsonString(r.problem.shape).c_str(), r.threads,
                 s * 1e3, r.problem.bytes / s * 1e-9, r.problem.flops / s * 1e-9, best ? "best" : "median",
                 r.timing.median * 1e3, r.timing.best * 1e3, r.timing.batches, r.timing.calls_per_batch, r.problem.n,
                 r.problem.f64 ? "f64" : "f32", r.problem.layout == Layout::kSplit ? "split" : "interleaved",
                 r.problem.bytes, r.problem.flops, planner, JsonString(fftwf_version).c_str(),
                 i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "]\n");
  if (std::fclose(f) != 0) Fail("cannot write " + path);
}

void Usage() {
  std::printf(
      "Usage: backplane_fftw_peer [--min-time S] [--threads 1,2] [--patient] [--best] [--json PATH]\n"
      "  FFTW on the problems of Backplane's physics.fft1d benchmark row.\n"
      "  --min-time S   seconds of timed batches per row (default 0.5)\n"
      "  --threads LIST thread counts, comma separated (default 1,2)\n"
      "  --patient      plan with FFTW_PATIENT instead of FFTW_MEASURE\n"
      "  --best         report the best batch instead of the median\n"
      "  --json PATH    also write the rows as a JSON list\n");
}

std::vector<int> ParseThreads(const std::string& s) {
  std::vector<int> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string item = s.substr(pos, comma - pos);
    char* end = nullptr;
    const long t = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || t < 1 || t > 1024) Fail("bad --threads value '" + s + "'");
    out.push_back(static_cast<int>(t));
    pos = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  double min_time = 0.5;
  std::vector<int> threads = {1, 2};
  bool patient = false, best = false;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) Fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--min-time") {
      const std::string v = value();
      char* end = nullptr;
      min_time = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || !(min_time >= 0 && min_time <= 60)) Fail("bad --min-time value '" + v + "'");
    } else if (a == "--threads") {
      threads = ParseThreads(value());
    } else if (a == "--patient") {
      patient = true;
    } else if (a == "--best") {
      best = true;
    } else if (a == "--json") {
      json = value();
    } else if (a == "--help" || a == "-h") {
      Usage();
      return 0;
    } else {
      Usage();
      Fail("unknown argument '" + a + "'");
    }
  }
  if (fftwf_init_threads() == 0 || fftw_init_threads() == 0) Fail("fftw(f)_init_threads failed");
  const unsigned flags = patient ? FFTW_PATIENT : FFTW_MEASURE;
  const char* planner = patient ? "FFTW_PATIENT" : "FFTW_MEASURE";

  std::printf("FFTW %s, planner %s, out-of-place forward, 64-byte aligned buffers; %s per call over batches "
              "(min time %.3g s).\n\n",
              fftwf_version, planner, best ? "best" : "median", min_time);
  std::printf("| Op | Size | Threads | Time (ms) | GB/s | GFLOP/s |\n|---|---|---|---|---|---|\n");
  std::vector<Row> rows;
  for (const Problem& p : Problems()) {
    for (const int t : threads) {
      const Timing timing = p.f64 ? Measure<double>(p, t, flags, min_time) : Measure<float>(p, t, flags, min_time);
      const double s = best ? timing.best : timing.median;
      std::printf("| peer.fftw_%s | %s | %d | %.3f | %.2f | %.1f |\n", p.name.c_str(), p.shape.c_str(), t, s * 1e3,
                  p.bytes / s * 1e-9, p.flops / s * 1e-9);
      std::fflush(stdout);
      rows.push_back({p, t, timing});
    }
  }
  if (!json.empty()) WriteJson(json, rows, best, planner);
  fftwf_cleanup_threads();
  fftw_cleanup_threads();
  return 0;
}
