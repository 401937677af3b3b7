#include <iostream>
#include <memory>
#include <string>

#include "backplane/catalog/inventory.hpp"
#include "backplane/conformance.hpp"
#include "commands.hpp"

namespace backplane::cli {

void AddInventoryCommand(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("inventory", "Print the catalog: methods, operation IDs, links (md: with what the executor calls, recorded)");
  auto format = std::make_shared<std::string>("md");
  cmd->add_option("--format", *format, "Output format (summary: the counts only)")
      ->check(CLI::IsMember({"md", "json", "summary"}));
  cmd->callback([format] {
    const auto devices = catalog::BuiltDevices();
    if (*format == "json") {
      std::cout << catalog::InventoryJson(devices).dump(2) << "\n";
    } else if (*format == "summary") {
      const std::string md = catalog::InventoryMarkdown(devices);
      // The two summary tables: from "## Summary" up to the next section.
      const size_t begin = md.find("## Summary");
      const size_t end = md.find("\n## ", begin + 1);
      std::cout << md.substr(begin, end - begin) << "\n";
    } else {
      const catalog::DispatchRecord dispatch = conformance::ToDispatchRecord(conformance::RunDispatchAudit());
      std::cout << catalog::InventoryMarkdown(devices, &dispatch);
    }
  });
}

}  // namespace backplane::cli
