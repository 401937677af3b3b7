// Subcommands of the backplane tool. Each Add* registers one subcommand whose callback does the
// work; errors are thrown as backplane::Error and reported by main.
#pragma once

#include <CLI/CLI.hpp>

namespace backplane::cli {

void AddInfoCommand(CLI::App& app);
void AddInventoryCommand(CLI::App& app);
void AddRunCommand(CLI::App& app);
void AddOpCommand(CLI::App& app);
void AddTrainCommand(CLI::App& app);
void AddVerifyCommand(CLI::App& app);
void AddBenchCommand(CLI::App& app);
void AddGenerateCommand(CLI::App& app);  // generate, perplexity
void AddEmbedCommand(CLI::App& app);
void AddImportCommand(CLI::App& app);  // import, onnx-test

}  // namespace backplane::cli
