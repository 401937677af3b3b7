#include "backplane/catalog/inventory.hpp"
#include "backplane/conformance.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include "support/cli.hpp"

namespace backplane::catalog {
namespace {

using test::CommandResult;
using test::RunCli;

// The inventory as `backplane inventory` writes it: with the live dispatch audit.
const std::string& LiveMarkdown() {
  static const std::string md = [] {
    const DispatchRecord dispatch = conformance::ToDispatchRecord(conformance::RunDispatchAudit());
    return InventoryMarkdown(BuiltDevices(), &dispatch);
  }();
  return md;
}

TEST(Inventory, JsonHasTheStableKeys) {
  const nlohmann::json j = InventoryJson(BuiltDevices());
  EXPECT_EQ(j["seed"]["surfaces"], 25);
  EXPECT_EQ(j["seed"]["methods"], 151);
  EXPECT_EQ(j["seed"]["required_ops"], 119);
  EXPECT_EQ(j["seed"]["links"]["direct"], 74);
  EXPECT_EQ(j["seed"]["links"]["composite"], 3);
  EXPECT_EQ(j["seed"]["links"]["kernel_registry"], 32);
  EXPECT_EQ(j["seed"]["links"]["graph_only"], 10);
  EXPECT_EQ(j["seed"]["backend_only_methods"], 88);
  EXPECT_EQ(j["backplane"]["surfaces"], Surfaces().size());
  EXPECT_EQ(j["backplane"]["methods"], Methods().size());
  ASSERT_TRUE(j["backplane"]["implemented"].contains("cpu"));
  const int implemented = j["backplane"]["implemented"]["cpu"];
  const size_t missing = j["backplane"]["not_implemented"].size();
  EXPECT_EQ(implemented + missing, Methods().size());
  EXPECT_EQ(j["backplane"]["registry_only_required_ops"], 0);
  EXPECT_EQ(j["backplane"]["methods_without_op_id"], 0);
  for (const auto& name : j["backplane"]["not_implemented"]) {
    EXPECT_NE(FindMethod(name.get<std::string>()), nullptr) << name;
  }
}

TEST(Inventory, CommittedMarkdownIsFresh) {
#ifndef BACKPLANE_HAVE_CUDA
  GTEST_SKIP() << "docs/backend-inventory.md has a cuda column from a CUDA build; this build has no CUDA backend";
#endif
  std::ifstream file(std::string(BACKPLANE_SOURCE_DIR) + "/docs/backend-inventory.md");
  ASSERT_TRUE(file.good()) << "docs/backend-inventory.md is missing; run `make docs`";
  std::stringstream committed;
  committed << file.rdbuf();
  EXPECT_TRUE(committed.str() == LiveMarkdown())
      << "docs/backend-inventory.md is stale; run `make docs` and commit it";
}

TEST(Inventory, CliPrintsJsonAndMarkdown) {
  const CommandResult json = RunCli("inventory --format json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  const nlohmann::json parsed = nlohmann::json::parse(json.output);
  EXPECT_EQ(parsed["seed"]["methods"], 151);
  const CommandResult md = RunCli("inventory");
  ASSERT_EQ(md.exit_code, 0) << md.output;
  EXPECT_EQ(md.output, LiveMarkdown());
  const CommandResult info = RunCli("info");
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("simd target selected:"), std::string::npos) << info.output;
}

TEST(Inventory, CliRejectsBadInputWithExitCode2) {
  for (const char* args : {"", "frobnicate", "inventory --format xml", "info --bogus",
                           "inventory --format"}) {
    const CommandResult r = RunCli(args);
    EXPECT_EQ(r.exit_code, 2) << "args: '" << args << "' output: " << r.output;
    EXPECT_NE(r.output.find("backplane: error:"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("usage:"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace backplane::catalog
