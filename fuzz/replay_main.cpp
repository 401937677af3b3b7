// A libFuzzer-free driver for the fuzz targets (any compiler, e.g. the g++ ASan build): runs
// LLVMFuzzerTestOneInput on every file of the given corpus folders, then on a fixed number of
// mutants of them (bit flips, byte overwrites with boundary values, truncations, duplicated and
// inserted chunks), from a fixed seed, so a run is reproducible. A finding aborts, as under
// libFuzzer; the input that did it is left in the current folder as <program>-last-input.
//   fuzz_replay_<target> [--runs N] [--seed S] DIR...
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

uint64_t Next(uint64_t& s) {  // splitmix64
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Bytes Mutate(const Bytes& in, uint64_t& rng) {
  Bytes b = in;
  const int edits = 1 + static_cast<int>(Next(rng) % 4);
  static const uint8_t kBoundary[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '0', '9', '-', '"', '[', '{', ','};
  for (int e = 0; e < edits; ++e) {
    const size_t n = b.size();
    const size_t at = n ? Next(rng) % n : 0;
    switch (Next(rng) % 7) {
      case 0:
        if (n) b[at] ^= static_cast<uint8_t>(1u << (Next(rng) % 8));
        break;
      case 1:
        if (n) b[at] = kBoundary[Next(rng) % sizeof(kBoundary)];
        break;
      case 2:
        if (n) b[at] = static_cast<uint8_t>(Next(rng));
        break;
      case 3:
        b.resize(n ? Next(rng) % n : 0);  // truncate
        break;
      case 4: {  // duplicate a chunk in place
        if (!n) break;
        const size_t len = 1 + Next(rng) % std::min<size_t>(n - at, 64);
        const Bytes chunk(b.begin() + at, b.begin() + at + len);
        b.insert(b.begin() + at, chunk.begin(), chunk.end());
        break;
      }
      case 5: {  // insert random bytes
        const size_t len = 1 + Next(rng) % 8;
        for (size_t i = 0; i < len; ++i) b.insert(b.begin() + at, static_cast<uint8_t>(Next(rng)));
        break;
      }
      case 6:  // overwrite 8 bytes with a little-endian boundary integer (sizes, counts, offsets)
        if (n >= 8) {
          static const uint64_t kInts[] = {0, 1, 0x7fffffffull, 0xffffffffull, 0x7fffffffffffffffull, ~0ull, 1ull << 40};
          const uint64_t v = kInts[Next(rng) % std::size(kInts)];
          const size_t pos = Next(rng) % (n - 7);
          std::memcpy(b.data() + pos, &v, 8);
        }
        break;
    }
  }
  return b;
}

Bytes ReadAll(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

std::string kept = "fuzz-replay-last-input";

// Written before each run, so that an abort leaves the input behind (<program>-last-input).
void Keep(const Bytes& b) {
  std::ofstream f(kept, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  kept = std::filesystem::path(argv[0]).filename().string() + "-last-input";
  long runs = 2000;
  uint64_t seed = 1;
  std::vector<Bytes> corpus;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::strtol(argv[++i], nullptr, 10);
    } else if (a == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::filesystem::is_directory(a)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(a)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) corpus.push_back(ReadAll(f));
    } else {
      std::fprintf(stderr, "fuzz-replay: '%s' is not a folder (usage: [--runs N] [--seed S] DIR...)\n", a.c_str());
      return 2;
    }
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "fuzz-replay: no corpus files\n");
    return 2;
  }
  for (const Bytes& b : corpus) {
    Keep(b);
    LLVMFuzzerTestOneInput(b.data(), b.size());
  }
  uint64_t rng = seed;
  for (long r = 0; r < runs; ++r) {
    const Bytes m = Mutate(corpus[Next(rng) % corpus.size()], rng);
    Keep(m);
    LLVMFuzzerTestOneInput(m.data(), m.size());
  }
  std::remove(kept.c_str());
  std::printf("fuzz-replay: %zu corpus files and %ld mutants, no finding\n", corpus.size(), runs);
  return 0;
}
