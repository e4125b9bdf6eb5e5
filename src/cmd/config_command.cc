// rampart config show | check FILE | default | docs
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "cmd/commands.h"
#include "common/config.h"

namespace rampart::cmd {

void RegisterConfigCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* config = app.add_subcommand(
      "config", "Show, check and document the cluster configuration (see docs/configuration.md)");
  config->require_subcommand(1);

  CLI::App* show = config->add_subcommand(
      "show",
      "Print the effective configuration as TOML: --config FILE over the embedded default, "
      "every setting spelled out");
  OnRunWithConfig(show, ctx, [](const ClusterConfig& loaded) {
    std::cout << FormatClusterConfig(loaded);
    return kExitOk;
  });

  auto path = std::make_shared<std::string>();
  CLI::App* check = config->add_subcommand(
      "check",
      "Validate a cluster file. Exit 0 and print a summary when it is valid; otherwise print "
      "the first problem (file:line:column: key and what is wrong) and exit 2");
  check->add_option("FILE", *path, "The cluster file (TOML) to validate")->required();
  OnRun(check, ctx, [path] {
    const Result<ClusterConfig> loaded = LoadClusterConfig(*path);
    if (!loaded.ok()) return ReportUsageError(loaded.status());
    std::cout << *path << ": OK (cluster " << loaded->name << ", " << loaded->nodes.size()
              << (loaded->nodes.size() == 1 ? " node" : " nodes") << ", transport "
              << loaded->transport.backend << ")\n";
    return kExitOk;
  });

  CLI::App* print_default = config->add_subcommand(
      "default",
      "Print the embedded default configuration (config/default.toml, with its comments); a "
      "starting point for a cluster file");
  OnRun(print_default, ctx, [] {
    std::cout << DefaultClusterConfigText();
    return kExitOk;
  });

  CLI::App* docs = config->add_subcommand(
      "docs", "Print the settings reference table (Markdown) kept in docs/configuration.md");
  OnRun(docs, ctx, [] {
    std::cout << ClusterSettingsMarkdown();
    return kExitOk;
  });
}

}  // namespace rampart::cmd
