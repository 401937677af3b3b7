// `backplane generate` end to end on the packaged SmolLM2 (the perplexity metric: perplexity_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli.hpp"
#include "support/golden.hpp"
#include "support/models.hpp"

namespace backplane::test {
namespace {

TEST(GenerateCli, ExactPathGivesTheReferenceGreedyTokens) {
  ASSERT_TRUE(ModelPresent(SmolLM2Path())) << FetchHint(SmolLM2Path());
  const nlohmann::json ref = LoadGolden("smollm2/reference.json")["prompt"];
  const std::string ids = (std::filesystem::temp_directory_path() / "backplane_generate_ids.json").string();
  const CommandResult r = RunCli("generate --model " + SmolLM2Path() +
                                 " --prompt 'Once upon a time, there was a little' -n 20 --exact --ctx 64 --ids-json " + ids);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json got = nlohmann::json::parse(std::ifstream(ids));
  EXPECT_EQ(got["prompt"], ref["ids_fed"]);
  EXPECT_EQ(got["generated"], ref["greedy"]["generate_ids"]);
  EXPECT_NE(r.output.find(ref["greedy"]["generate_text"].get<std::string>()), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("tokens/s"), std::string::npos) << r.output;
}

TEST(GenerateCli, ChatUsesTheTemplateAndStopsAtEndOfTurn) {
  ASSERT_TRUE(ModelPresent(SmolLM2Path())) << FetchHint(SmolLM2Path());
  const nlohmann::json ref = LoadGolden("smollm2/reference.json")["chat"];
  const std::string ids = (std::filesystem::temp_directory_path() / "backplane_chat_ids.json").string();
  const CommandResult r = RunCli("generate --model " + SmolLM2Path() +
                                 " --chat 'What is the capital of France?' -n 20 --exact --ctx 128 --ids-json " + ids);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json got = nlohmann::json::parse(std::ifstream(ids));
  EXPECT_EQ(got["prompt"], ref["ids"]);
  EXPECT_EQ(got["generated"], ref["generate_ids"]);
  EXPECT_NE(r.output.find("The capital of France is Paris."), std::string::npos) << r.output;
}

TEST(GenerateCli, BadInputIsAOneLineError) {
  ASSERT_TRUE(ModelPresent(SmolLM2Path())) << FetchHint(SmolLM2Path());
  const CommandResult missing = RunCli("generate --model /nonexistent.gguf --prompt hi");
  EXPECT_EQ(missing.exit_code, 1) << missing.output;
  EXPECT_NE(missing.output.find("/nonexistent.gguf"), std::string::npos) << missing.output;
  const CommandResult both = RunCli("generate --model " + SmolLM2Path() + " --prompt a --chat b");
  EXPECT_EQ(both.exit_code, 1) << both.output;
  EXPECT_NE(both.output.find("--prompt/--chat"), std::string::npos) << both.output;
  const CommandResult too_long = RunCli("generate --model " + SmolLM2Path() +
                                        " --prompt 'one two three four five six seven eight nine ten' --ctx 4");
  EXPECT_EQ(too_long.exit_code, 1) << too_long.output;
  EXPECT_NE(too_long.output.find("--ctx 4"), std::string::npos) << too_long.output;
}

}  // namespace
}  // namespace backplane::test
