#include <iostream>
#include <memory>
#include <string>

#include "backplane/catalog/inventory.hpp"
#include "commands.hpp"

namespace backplane::cli {

void AddInventoryCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("inventory", "Print the catalog: methods, operation IDs, links");
  auto format = std::make_shared<std::string>("md");
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"md", "json"}));
  cmd->callback([format] {
    const auto devices = catalog::BuiltDevices();
    if (*format == "json") {
      std::cout << catalog::InventoryJson(devices).dump(2) << "\n";
    } else {
      std::cout << catalog::InventoryMarkdown(devices);
    }
  });
}

}  // namespace backplane::cli
