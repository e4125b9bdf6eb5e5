// rampart secret generate FILE: a new cluster secret for cluster.secret_file.
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>
#include <memory>

#include "cmd/commands.h"
#include "common/config.h"

namespace rampart::cmd {
namespace {

constexpr size_t kSecretRandomBytes = 32;

// 32 random bytes (OpenSSL's generator) as 64 hex digits and a newline.
Result<std::string> NewSecret() {
  unsigned char random[kSecretRandomBytes];
  if (RAND_bytes(random, sizeof random) != 1) {
    return InternalError("no random bytes (OpenSSL RAND_bytes failed)");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  for (unsigned char b : random) {
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  return text + "\n";
}

// Writes `text` to a new file `path` readable by its owner only; with
// `replace`, over an existing file (atomically, through a temporary file).
Status WriteSecretFile(const std::string& path, const std::string& text, bool replace) {
  const std::string target = replace ? path + ".tmp" : path;
  const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (errno == EEXIST && !replace) {
      return AlreadyExists(path, " exists; it may be the secret of a running cluster (--force "
                                 "replaces it)");
    }
    return ErrnoStatus(StrCat("cannot create ", target), errno);
  }
  const ssize_t written = write(fd, text.data(), text.size());
  const int write_errno = errno;
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (written != static_cast<ssize_t>(text.size()) || !synced) {
    unlink(target.c_str());
    return ErrnoStatus(StrCat("cannot write ", target), written < 0 ? write_errno : EIO);
  }
  if (replace && rename(target.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(target.c_str());
    return ErrnoStatus(StrCat("cannot replace ", path), err);
  }
  return Status();
}

}  // namespace

void RegisterSecretCommand(CLI::App& app, CommandContext& ctx) {
  CLI::App* secret = app.add_subcommand(
      "secret", "Cluster secrets: kv-nodes and storage nodes serve only peers that prove they hold "
                "the cluster's (cluster.secret_file; docs/deploy.md)");
  secret->require_subcommand(1);
  struct Flags {
    std::string path;
    bool force = false;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* generate = secret->add_subcommand(
      "generate",
      "Write a new random secret (256 bits, as hex) to FILE, readable by its owner only. Copy "
      "the file to every host and set cluster.secret_file to it");
  generate->add_option("FILE", flags->path, "Where to write the secret")->required();
  generate->add_flag("--force", flags->force, "Replace FILE if it exists");
  OnRun(generate, ctx, [flags] {
    Result<std::string> text = NewSecret();
    if (!text.ok()) return ReportFailure(text.status());
    if (Status st = WriteSecretFile(flags->path, *text, flags->force); !st.ok()) {
      return st.code() == StatusCode::kAlreadyExists ? ReportUsageError(st) : ReportFailure(st);
    }
    std::cout << "wrote a new cluster secret to " << flags->path
              << "; set cluster.secret_file = \"" << flags->path
              << "\" in the cluster file on every host\n";
    return kExitOk;
  });
}

}  // namespace rampart::cmd
