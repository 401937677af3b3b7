// The dispatch audit: the inventory's cross-links are the methods the executor really calls.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backplane/catalog/catalog.hpp"
#include "backplane/conformance.hpp"
#include "backplane/cpu/cpu_backend.hpp"
#include "backplane/runtime/recording_backend.hpp"

namespace backplane::conformance {
namespace {

const std::vector<OpDispatch>& Audit() {
  static const std::vector<OpDispatch> audit = RunDispatchAudit();
  return audit;
}

TEST(RecordingBackend, RecordsExactlyTheMethodsCalledAndForwardsThem) {
  const auto cpu = cpu::CreateBackend();
  runtime::RecordingBackend recorder(*cpu);
  EXPECT_EQ(recorder.device(), "cpu");
  EXPECT_TRUE(recorder.Called().empty());
  const float x[3] = {-1.0f, 0.5f, 2.0f};
  float y[3] = {};
  recorder.Activation().ReLU(y, x, 3, DType::Float32);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[2], 2.0f);
  EXPECT_EQ(recorder.Reduction().Sum(x, 3, DType::Float32), 1.5);
  const std::vector<catalog::MethodId> called = recorder.Called();
  ASSERT_EQ(called.size(), 2u);
  EXPECT_EQ(catalog::Method(called[0]).QualifiedName(), "Activation.ReLU");
  EXPECT_EQ(catalog::Method(called[1]).QualifiedName(), "Reduction.Sum");
  recorder.Clear();
  EXPECT_TRUE(recorder.Called().empty());
}

TEST(DispatchAudit, CoversEveryCanonicalOp) {
  size_t canonical = 0;
  for (const catalog::OpInfo& op : catalog::Ops()) canonical += op.alias_of.empty() ? 1 : 0;
  EXPECT_EQ(Audit().size(), canonical);
  for (const OpDispatch& row : Audit()) {
    EXPECT_GT(row.runs, 0) << row.op << ": no probe ran; rejected: " << fmt::format("{}", row.rejected);
  }
}

// The example: attention.gqa and attention.mqa link Attention.FlashAttention, so a graph
// must reach it (long sequences), as well as MultiHeadAttention (short ones).
TEST(DispatchAudit, EveryBackplaneLinkIsExercised) {
  for (const OpDispatch& row : Audit()) {
    const std::vector<std::string> missing = UnexercisedLinks(row);
    EXPECT_TRUE(missing.empty()) << row.op << " links " << fmt::format("{}", missing)
                                 << " but no run reached it; the runs called " << fmt::format("{}", row.called);
  }
}

// Methods an op may call beyond its link: layout moves and the bias add around the linked kernel,
// and whatever a Fused node's subgraph holds. Anything else is a link the catalog is missing.
struct Helper {
  const char* op;      // "*": any op
  const char* method;
  const char* reason;
};
const Helper kHelpers[] = {
    {"*", "Shape.Transpose", "moves the reduced or channel axis last for the row-wise kernel, and back"},
    {"*", "Shape.MergeHeads", "[B, H, S, D] to the multi-head kernel's [B, S, H*D] rows"},
    {"*", "Shape.ViewAsHeads", "the multi-head kernel's rows back to [B, H, S, D]"},
    {"projection.fused_qkv", "Shape.Split", "the packed q|k|v projection split into its three outputs"},
    {"projection.linear", "Elementwise.Add", "the optional bias"},
    {"projection.fused_qkv", "Elementwise.Add", "the optional bias"},
    {"Fused", "*", "a fused node runs the methods of the subgraph it replaced"},
};

TEST(DispatchAudit, EveryUnlinkedCallIsALayoutMoveOrABias) {
  for (const OpDispatch& row : Audit()) {
    for (const std::string& m : row.called) {
      if (std::find(row.linked.begin(), row.linked.end(), m) != row.linked.end()) continue;
      bool allowed = false;
      for (const Helper& h : kHelpers) {
        allowed = allowed || ((std::string(h.op) == "*" || h.op == row.op) && (std::string(h.method) == "*" || h.method == m));
      }
      EXPECT_TRUE(allowed) << row.op << " calls " << m << ", which its link " << fmt::format("{}", row.linked)
                           << " does not name: add it to the op's Backplane link in src/catalog";
    }
  }
}

TEST(DispatchAudit, AttentionReachesBothKernels) {
  for (const OpDispatch& row : Audit()) {
    if (row.op != "attention.gqa" && row.op != "attention.mqa") continue;
    EXPECT_NE(std::find(row.called.begin(), row.called.end(), "Attention.FlashAttention"), row.called.end()) << row.op;
    EXPECT_NE(std::find(row.called.begin(), row.called.end(), "Attention.MultiHeadAttention"), row.called.end())
        << row.op;
  }
}

}  // namespace
}  // namespace backplane::conformance
