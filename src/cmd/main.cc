// The `rampart` binary: global flags, the subcommands, and exit codes.
//
//   rampart [--config FILE] [--log-level LEVEL] <command> ...
//
// Usage errors (bad flags, unknown commands, a bad configuration) print one
// line on stderr and exit with 2; --help prints help on stdout and exits 0.
#include <CLI/CLI.hpp>

#include <cctype>
#include <cstdio>
#include <exception>
#include <string>

#include "cmd/commands.h"
#include "common/log.h"

namespace rampart::cmd {
namespace {

std::string OneLine(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  for (char& c : text) {
    if (c == '\n') c = ' ';
  }
  return text;
}

std::string CommandNames(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    out += (out.empty() ? "" : ", ") + sub->get_name();
  }
  return out;
}

// The deepest subcommand selected on the command line (or `app` itself).
const CLI::App* Selected(const CLI::App& app) {
  const CLI::App* current = &app;
  for (;;) {
    const std::vector<CLI::App*> chosen = current->get_subcommands();
    if (chosen.empty()) return current;
    current = chosen.front();
  }
}

// "rampart config check"
std::string CommandPath(const CLI::App* command) {
  std::string path;
  for (const CLI::App* a = command; a != nullptr; a = a->get_parent()) {
    path = path.empty() ? a->get_name() : a->get_name() + " " + path;
  }
  return path;
}

// Maps CLI11's outcome to ours: help and version exit 0 (printed on stdout),
// every other parse error is one line on stderr and exit 2.
int ExitForParseError(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    return app.exit(e);  // --help, --help-all
  }
  const CLI::App* where = Selected(app);
  std::string message = OneLine(e.what());
  if (message.size() > 1 && std::isupper(static_cast<unsigned char>(message[0])) &&
      std::islower(static_cast<unsigned char>(message[1]))) {
    message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  }
  const bool wants_command =
      where->get_require_subcommand_min() > 0 && where->get_subcommands().empty();
  const std::vector<std::string> extra = app.remaining(/*recurse=*/true);
  if (!extra.empty() && extra.front().starts_with("-")) {
    message = "unknown option " + extra.front();
  } else if (wants_command && !extra.empty()) {
    message = "unknown command \"" + extra.front() + "\"; one of: " + CommandNames(*where);
  } else if (wants_command && dynamic_cast<const CLI::RequiredError*>(&e) != nullptr) {
    message = "missing command; one of: " + CommandNames(*where);
  }
  std::fprintf(stderr, "rampart: %s (see %s --help)\n", message.c_str(),
               CommandPath(where).c_str());
  return kExitUsage;
}

// Every subcommand's --help mentions the global flags, which may follow it.
void AddGlobalFlagsFooter(CLI::App& app) {
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    sub->footer(
        "Global options (before or after the command): --config FILE, --log-level LEVEL; see "
        "rampart --help");
    AddGlobalFlagsFooter(*sub);
  }
}

}  // namespace

int Main(int argc, char** argv) {
  CommandContext ctx;
  CLI::App app{
      "rampart: a distributed in-memory key-value store with read-atomic multi-partition "
      "transactions over RDMA-style one-sided operations",
      "rampart"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the subcommand
  app.add_option("--config", ctx.config_path,
                 "Cluster file (TOML) read over the embedded default configuration "
                 "(see `rampart config default` and docs/configuration.md)")
      ->type_name("FILE");
  app.add_option("--log-level", ctx.log_level,
                 "trace, debug, info, warn, error, critical or off; $RAMPART_LOG overrides it")
      ->type_name("LEVEL")
      ->default_str("info")
      ->check(CLI::Validator(
          [](std::string& level) {
            const Status s = CheckLogLevel(level);
            return s.ok() ? std::string() : std::string(s.message());
          },
          ""));

  RegisterConfigCommand(app, ctx);
  RegisterBenchCommands(app, ctx);
  RegisterBenchTxnCommand(app, ctx);  // after RegisterBenchCommands: adds `bench txn`
  RegisterBenchIopsCommands(app, ctx);  // adds `bench iops` and `bench replay`
  RegisterBenchXorCommand(app, ctx);  // adds `bench xor`
  RegisterBenchVolumeCommand(app, ctx);  // adds `bench volume`
  RegisterBenchConnectCommand(app, ctx);  // adds `bench connect`
  RegisterCheckCommand(app, ctx);
  RegisterRunCommand(app, ctx);
  RegisterKvNodeCommand(app, ctx);
  RegisterStorageNodeCommand(app, ctx);
  RegisterUpCommand(app, ctx);
  RegisterProxyCommand(app, ctx);
  RegisterNbdCommand(app, ctx);
  RegisterVolumeCommands(app, ctx);
  RegisterKvLogCommands(app, ctx);
  RegisterSecretCommand(app, ctx);
  AddGlobalFlagsFooter(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitForParseError(app, e);
  }
  InitLogging(ctx.log_level);
  if (!ctx.action) {
    return ReportUsageError(InvalidArgument("command \"", Selected(app)->get_name(),
                                            "\" has nothing to run (see rampart --help)"));
  }
  try {
    return ctx.action();
  } catch (const std::exception& e) {
    return ReportFailure(InternalError("uncaught exception: ", e.what()));
  }
}

}  // namespace rampart::cmd

// jemalloc's settings for this binary (CMakeLists.txt links jemalloc into it;
// under the sanitizers' malloc nothing reads this). MALLOC_CONF in the
// environment still overrides it.
// - oversize_threshold:0 — by default jemalloc serves every block of 8 MiB or
//   more from an arena that gives its pages back to the kernel the moment it
//   is freed, so a buffer that is freed and allocated again per batch (the
//   NBD server's replies to 8 READs of 1 MiB) was faulted in and zeroed anew
//   each time: 0.85 instead of 2.2 GB/s. Such blocks now come from the usual
//   arenas, whose freed pages go back no sooner than dirty_decay_ms (10 s).
extern "C" {
const char* malloc_conf = "oversize_threshold:0";
}

int main(int argc, char** argv) { return rampart::cmd::Main(argc, argv); }
