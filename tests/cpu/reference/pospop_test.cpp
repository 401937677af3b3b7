// PosPop reference kernels, called through the CPU backend. Oracles: numpy.unpackbits golden data
// (tests/golden/gen_pospop.py), a naive (word >> b) & 1 loop written here, and closed-form cases.
#include <cstdint>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "backplane/cpu/cpu_backend.hpp"
#include "support/test_support.hpp"

namespace backplane {
namespace {

template <class Word>
constexpr int kBits = std::numeric_limits<Word>::digits;

// Calls Count8/16/32/64 by word type.
template <class Word>
void Count(int64_t* counts, const Word* buf, int64_t n) {
  static auto backend = cpu::CreateBackend();
  PosPopSurface& s = backend->PosPop();
  if constexpr (sizeof(Word) == 1) s.Count8(counts, buf, n);
  if constexpr (sizeof(Word) == 2) s.Count16(counts, buf, n);
  if constexpr (sizeof(Word) == 4) s.Count32(counts, buf, n);
  if constexpr (sizeof(Word) == 8) s.Count64(counts, buf, n);
}

template <class Word>
std::string OpName() {
  return "PosPop.Count" + std::to_string(kBits<Word>);
}

// The oracle: for each bit position, test the bit of every word.
template <class Word>
std::vector<int64_t> NaiveCounts(const std::vector<Word>& words) {
  std::vector<int64_t> counts(kBits<Word>, 0);
  for (Word w : words) {
    for (int b = 0; b < kBits<Word>; ++b) counts[static_cast<size_t>(b)] += (w >> b) & 1u;
  }
  return counts;
}

template <class Word>
std::vector<Word> RandomWords(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Word> words(static_cast<size_t>(n));
  for (Word& w : words) {
    // AND of two draws for some words: the bit density varies, so counts differ per position.
    const uint64_t v = rng();
    w = static_cast<Word>((seed % 2 == 0) ? v : (v & rng()));
  }
  return words;
}

template <class Word>
std::vector<int64_t> Run(const std::vector<Word>& words, std::vector<int64_t> counts = {}) {
  if (counts.empty()) counts.assign(kBits<Word>, 0);
  Count<Word>(counts.data(), words.data(), static_cast<int64_t>(words.size()));
  return counts;
}

nlohmann::json Golden() {
  std::ifstream in(test::GoldenPath("pospop.json"));
  EXPECT_TRUE(in.good()) << "missing golden file; run tests/golden/gen_pospop.py";
  return nlohmann::json::parse(in);
}

template <class Word>
void CheckGoldenCase(const nlohmann::json& c) {
  const std::vector<Word> words = c["words"].get<std::vector<Word>>();
  EXPECT_EQ(Run(words), c["counts"].get<std::vector<int64_t>>())
      << OpName<Word>() << " n=" << words.size();
}

TEST(PosPopReference, MatchesNumpyGolden) {
  const nlohmann::json golden = Golden();
  auto backend = cpu::CreateBackend();
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    switch (c["width"].get<int>()) {
      case 8:
        CheckGoldenCase<uint8_t>(c);
        break;
      case 16:
        CheckGoldenCase<uint16_t>(c);
        break;
      case 32:
        CheckGoldenCase<uint32_t>(c);
        break;
      case 64:
        CheckGoldenCase<uint64_t>(c);
        break;
      case 0: {
        const auto bytes = c["words"].get<std::vector<uint8_t>>();
        const std::string str(bytes.begin(), bytes.end());
        std::vector<int64_t> counts(8, 0);
        backend->PosPop().CountString(counts.data(), str);
        EXPECT_EQ(counts, c["counts"].get<std::vector<int64_t>>());
        break;
      }
      default:
        ADD_FAILURE() << "bad width in golden file";
    }
    ++checked;
  }
  EXPECT_EQ(checked, 33);
}

template <class Word>
void CheckAgainstNaive() {
  for (int64_t n : {0, 1, 2, 7, 15, 16, 17, 31, 255, 4097}) {
    for (uint64_t seed : {uint64_t{1}, uint64_t{2}}) {
      const std::vector<Word> words = RandomWords<Word>(n, seed * 1000 + static_cast<uint64_t>(n));
      EXPECT_EQ(Run(words), NaiveCounts(words)) << OpName<Word>() << " n=" << n;
    }
  }
}

TEST(PosPopReference, RandomWordsMatchNaiveBitLoop) {
  CheckAgainstNaive<uint8_t>();
  CheckAgainstNaive<uint16_t>();
  CheckAgainstNaive<uint32_t>();
  CheckAgainstNaive<uint64_t>();
}

template <class Word>
void CheckClosedForms() {
  constexpr int w = kBits<Word>;
  // All ones: every position counts every word.
  const std::vector<Word> ones(1001, std::numeric_limits<Word>::max());
  EXPECT_EQ(Run(ones), std::vector<int64_t>(w, 1001)) << OpName<Word>();
  // All zeros.
  EXPECT_EQ(Run(std::vector<Word>(77, 0)), std::vector<int64_t>(w, 0)) << OpName<Word>();
  // Powers of two cycling through the positions: 3 full cycles plus the first 5 positions.
  std::vector<Word> powers;
  for (int i = 0; i < 3 * w + 5; ++i) powers.push_back(static_cast<Word>(Word{1} << (i % w)));
  std::vector<int64_t> want(w, 3);
  for (int b = 0; b < 5; ++b) want[static_cast<size_t>(b)] = 4;
  EXPECT_EQ(Run(powers), want) << OpName<Word>();
  // The most significant bit alone lands in counts[w - 1].
  std::vector<int64_t> msb(w, 0);
  msb[static_cast<size_t>(w - 1)] = 2;
  EXPECT_EQ(Run(std::vector<Word>(2, static_cast<Word>(Word{1} << (w - 1)))), msb);
}

TEST(PosPopReference, ClosedFormCases) {
  CheckClosedForms<uint8_t>();
  CheckClosedForms<uint16_t>();
  CheckClosedForms<uint32_t>();
  CheckClosedForms<uint64_t>();
}

template <class Word>
void CheckStreaming() {
  const std::vector<Word> words = RandomWords<Word>(5003, 7);
  const std::vector<int64_t> whole = Run(words);
  // Chunks of uneven sizes, accumulated into one counts array, equal one call.
  std::vector<int64_t> counts(kBits<Word>, 0);
  size_t at = 0;
  for (size_t chunk : {size_t{0}, size_t{1}, size_t{14}, size_t{15}, size_t{1000}, size_t{3973}}) {
    Count<Word>(counts.data(), words.data() + at, static_cast<int64_t>(chunk));
    at += chunk;
  }
  ASSERT_EQ(at, words.size());
  EXPECT_EQ(counts, whole) << OpName<Word>();
  // Accumulating: counts that start non-zero (even negative) are added to, not cleared.
  std::vector<int64_t> start(kBits<Word>);
  for (int b = 0; b < kBits<Word>; ++b) start[static_cast<size_t>(b)] = 100 * b - 7;
  const std::vector<int64_t> added = Run(words, start);
  for (int b = 0; b < kBits<Word>; ++b) {
    EXPECT_EQ(added[static_cast<size_t>(b)],
              start[static_cast<size_t>(b)] + whole[static_cast<size_t>(b)]);
  }
}

TEST(PosPopReference, StreamingOverChunksEqualsOneCallAndAccumulates) {
  CheckStreaming<uint8_t>();
  CheckStreaming<uint16_t>();
  CheckStreaming<uint32_t>();
  CheckStreaming<uint64_t>();
}

TEST(PosPopReference, CountStringIsCount8OverRawBytes) {
  auto backend = cpu::CreateBackend();
  // Embedded NUL, high bytes and multi-byte UTF-8 are all just bytes.
  const std::string str = std::string("a\0b\xff\x80", 5) + "h\xC3\xA9llo";
  std::vector<int64_t> from_string(8, 0);
  backend->PosPop().CountString(from_string.data(), str);
  const std::vector<uint8_t> bytes(str.begin(), str.end());
  EXPECT_EQ(from_string, NaiveCounts(bytes));
  // Empty string: counts untouched, and null counts is fine.
  std::vector<int64_t> counts(8, 5);
  backend->PosPop().CountString(counts.data(), std::string_view());
  EXPECT_EQ(counts, std::vector<int64_t>(8, 5));
  EXPECT_NO_THROW(backend->PosPop().CountString(nullptr, std::string_view()));
}

// Every validation path throws before the counts are touched.
template <class Word>
void CheckBadInput() {
  const std::string op = OpName<Word>();
  const std::vector<Word> words(10, static_cast<Word>(0x5A));
  test::Buffer counts(DType::Int64, kBits<Word>);
  counts.Poison();
  auto* c = counts.as<int64_t>();
  EXPECT_TRUE(test::ThrowsError([&] { Count<Word>(c, words.data(), -1); },
                                ErrorCode::InvalidArgument, {op, "'count'", ">= 0", "-1"}));
  EXPECT_TRUE(test::ThrowsError([&] { Count<Word>(c, nullptr, 3); }, ErrorCode::InvalidArgument,
                                {op, "'buf'", "null"}));
  EXPECT_TRUE(test::ThrowsError([&] { Count<Word>(nullptr, words.data(), 3); },
                                ErrorCode::InvalidArgument, {op, "'counts'", "null"}));
  EXPECT_TRUE(counts.IsPoisoned()) << op;
  // Zero words: nothing read or written, null pointers allowed.
  EXPECT_NO_THROW(Count<Word>(nullptr, nullptr, 0));
  EXPECT_NO_THROW(Count<Word>(c, nullptr, 0));
  EXPECT_TRUE(counts.IsPoisoned()) << op;
  // A counter that would overflow int64: throws and leaves every counter as it was.
  std::vector<int64_t> near_max(kBits<Word>, 0);
  near_max[1] = std::numeric_limits<int64_t>::max() - 9;  // 10 words with bit 1 set: overflow
  const std::vector<int64_t> before = near_max;
  EXPECT_TRUE(test::ThrowsError([&] { Count<Word>(near_max.data(), words.data(), 10); },
                                ErrorCode::InvalidArgument, {op, "'counts'", "counts[1]"}));
  EXPECT_EQ(near_max, before);
  // One word fewer fits exactly.
  Count<Word>(near_max.data(), words.data(), 9);
  EXPECT_EQ(near_max[1], std::numeric_limits<int64_t>::max());
}

TEST(PosPopReference, BadInputThrowsAndLeavesCountsUntouched) {
  CheckBadInput<uint8_t>();
  CheckBadInput<uint16_t>();
  CheckBadInput<uint32_t>();
  CheckBadInput<uint64_t>();
  auto backend = cpu::CreateBackend();
  test::Buffer counts(DType::Int64, 8);
  counts.Poison();
  EXPECT_TRUE(test::ThrowsError([&] { backend->PosPop().CountString(nullptr, "abc"); },
                                ErrorCode::InvalidArgument, {"PosPop.CountString", "'counts'"}));
  EXPECT_TRUE(counts.IsPoisoned());
}

}  // namespace
}  // namespace backplane
