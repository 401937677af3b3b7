// The XLA device matrix, run here in shards: no cell may fail, and the committed record
// (docs/verify-xla.json, which the generated matrices are built from) must say what this run says.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "backplane/conformance.hpp"
#include "xla/xla_device.hpp"

namespace backplane::conformance {
namespace {

constexpr int kShards = 6;

class XlaDeviceMatrix : public testing::TestWithParam<int> {};

TEST_P(XlaDeviceMatrix, EveryCellPassesOrFallsBackAndTheRecordIsCurrent) {
  auto device = xla::XlaDevice::Open();
  Options options;
  options.shard = GetParam();
  options.shards = kShards;
  const std::vector<Cell> cells = RunDeviceMatrix(*device, "xla-cpu", options);
  std::map<std::pair<std::string, std::string>, std::string> run;
  std::set<std::string> ops;
  for (const Cell& c : cells) {
    run[{c.op, c.dtype}] = c.status;
    ops.insert(c.op);
    if (c.status == "failed") ADD_FAILURE() << c.op << " " << c.dtype << ": " << c.note;
  }
  std::ifstream f(std::string(BACKPLANE_SOURCE_DIR) + "/docs/verify-xla.json");
  ASSERT_TRUE(f) << "docs/verify-xla.json is missing: run `make docs`";
  std::stringstream text;
  text << f.rdbuf();
  const Record record = RecordFromJson(nlohmann::json::parse(text.str()));
  std::map<std::pair<std::string, std::string>, std::string> committed;
  for (const Cell& c : record.cells) {
    if (ops.contains(c.op)) committed[{c.op, c.dtype}] = c.status;
  }
  for (const auto& [key, status] : run) {
    const auto it = committed.find(key);
    EXPECT_TRUE(it != committed.end() && it->second == status)
        << key.first << " " << key.second << " is " << status << " here but "
        << (it == committed.end() ? std::string("absent") : it->second)
        << " in docs/verify-xla.json: regenerate it with `make docs`";
  }
  EXPECT_EQ(run.size(), committed.size()) << "docs/verify-xla.json has cells this run does not: regenerate it";
}

INSTANTIATE_TEST_SUITE_P(Shards, XlaDeviceMatrix, testing::Range(0, kShards));

}  // namespace
}  // namespace backplane::conformance
