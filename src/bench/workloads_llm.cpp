// Benchmark workloads of LLM inference: BlockQuant.MatmulT on the shapes of SmolLM2-135M
// (width 576, FFN 1536, vocabulary 49152) with its formats, Q4_1 layers and the Q8_0 output head.
// Shapes are rows x out x in. One row (decoding a token) streams the weights: GB/s of weight
// bytes against the read bandwidth (a Q4_1 layer matrix stays in L2/L3 between calls, so it can
// pass the DRAM figure; the 30 MB Q8_0 head does not); 128 rows (a prompt) reuse them: GFLOP/s,
// counting 2 rows out in.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backplane/block_format.hpp"
#include "backplane/convert.hpp"
#include "bench/bench_data.hpp"

namespace backplane::bench {
namespace {

// out x in weights of `format` (a quantised format): random codes, finite scales d = 0.01
// (and m = -0.08 where the format has an offset field).
std::shared_ptr<std::vector<uint8_t>> RandomWeights(BlockFormat format, int64_t out, int64_t in,
                                                    uint64_t seed) {
  const BlockLayout layout = LayoutOf(format);
  const int64_t blocks = out * in / layout.elements;
  auto w = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(blocks * layout.bytes));
  for (size_t i = 0; i < w->size(); ++i) {
    (*w)[i] = static_cast<uint8_t>(PhiloxBits(seed, 0, i / 4)[i % 4]);
  }
  const uint16_t d = F32ToF16(0.01f), m = F32ToF16(-0.08f);
  for (int64_t b = 0; b < blocks; ++b) {
    uint8_t* p = w->data() + b * layout.bytes;
    std::memcpy(p, &d, 2);
    if (format == BlockFormat::Q4_1 || format == BlockFormat::Q5_1) std::memcpy(p + 2, &m, 2);
  }
  return w;
}

Workload BlockMatmul(BlockFormat format, int64_t rows, int64_t out, int64_t in) {
  const double weight_bytes =
      static_cast<double>(out * in / LayoutOf(format).elements * LayoutOf(format).bytes);
  const double flops = 2.0 * static_cast<double>(rows * out * in);
  return {"quant.block_matmul",
          "BlockQuant",
          fmt::format("{} {}x{}x{} (rows x out x in)", BlockFormatName(format), rows, out, in),
          rows == 1 ? weight_bytes : 0.0,
          rows == 1 ? 0.0 : flops,
          rows == 1 ? "read" : "fma",
          [format, rows, out, in](Backend& b) {
            auto w = RandomWeights(format, out, in, 1);
            auto x = Random(rows * in, 2, -1, 1);
            auto y = std::make_shared<std::vector<float>>(static_cast<size_t>(rows * out));
            return std::function<void()>([&b, format, rows, out, in, w, x, y] {
              b.BlockQuant().MatmulT(y->data(), x->data(), w->data(), rows, out, in, format,
                                     DType::Float32);
            });
          }};
}

}  // namespace

void AddLlmWorkloads(std::vector<Workload>& w) {
  w.push_back(BlockMatmul(BlockFormat::Q4_1, 1, 576, 1536));
  w.push_back(BlockMatmul(BlockFormat::Q4_1, 1, 1536, 576));
  w.push_back(BlockMatmul(BlockFormat::Q4_1, 1, 576, 576));
  w.push_back(BlockMatmul(BlockFormat::Q8_0, 1, 49152, 576));
  w.push_back(BlockMatmul(BlockFormat::Q4_1, 128, 576, 1536));
  w.push_back(BlockMatmul(BlockFormat::Q4_1, 128, 1536, 576));
  w.push_back(BlockMatmul(BlockFormat::Q8_0, 128, 576, 576));
}

}  // namespace backplane::bench
