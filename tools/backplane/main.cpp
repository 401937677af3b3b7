// The backplane command-line tool.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "backplane/atomic_file.hpp"
#include "backplane/error.hpp"
#include "commands.hpp"

int main(int argc, char** argv) {
  constexpr int kUsageError = 2;
  backplane::io::RemoveTempFilesOnSignal();  // a killed write leaves no temporary file
  CLI::App app{"Backplane: a compute backend for AI research", "backplane"};
  app.require_subcommand(1);
  app.set_version_flag("--version", BACKPLANE_VERSION);
  backplane::cli::AddInfoCommand(app);
  backplane::cli::AddInventoryCommand(app);
  backplane::cli::AddRunCommand(app);
  backplane::cli::AddOpCommand(app);
  backplane::cli::AddTrainCommand(app);
  backplane::cli::AddVerifyCommand(app);
  backplane::cli::AddBenchCommand(app);
  backplane::cli::AddGenerateCommand(app);
  backplane::cli::AddEmbedCommand(app);
  backplane::cli::AddImportCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string message = e.what();
    if (message.empty()) message = "missing subcommand";
    std::cerr << "backplane: error: " << message << "\n"
              << "usage: backplane {info | inventory | run | op | train | verify | bench | generate | perplexity | embed | import | onnx-test} ... (see --help)\n";
    return kUsageError;
  } catch (const backplane::Error& e) {
    std::cerr << "backplane: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "backplane: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
