// Every catalog operation can run from a graph: each canonical ID has a lowering with a shape rule.
#include <gtest/gtest.h>

#include "backplane/catalog/catalog.hpp"
#include "backplane/runtime/op_registry.hpp"

namespace backplane::runtime {
namespace {

TEST(OpCoverage, EveryCatalogOpHasALowering) {
  int canonical = 0;
  for (const catalog::OpInfo& op : catalog::Ops()) {
    const OpImpl* impl = Registry().Find(op.id);
    EXPECT_NE(impl, nullptr) << op.id << " has no graph lowering";
    if (impl != nullptr) {
      EXPECT_TRUE(impl->infer) << op.id << " has no shape rule";
      EXPECT_TRUE(impl->run) << op.id;
    }
    canonical += op.alias_of.empty() ? 1 : 0;
  }
  EXPECT_EQ(static_cast<int>(Registry().Ids().size()), canonical);
}

}  // namespace
}  // namespace backplane::runtime
