#ifndef JOBWHEEL_TOOLS_JOBWHEELCTL_COMMAND_H_
#define JOBWHEEL_TOOLS_JOBWHEELCTL_COMMAND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/grpc/channel.h"
#include "grpcpp/grpcpp.h"
#include "tools/jobwheelctl/ctl_options.h"

namespace jobwheel::ctl {

// What one command runs with: the parsed options, its positional arguments, the admin token
// and the channels to the scheduler and the registry (made on first use, then reused).
// Commands print to stdout/stderr and return the exit code: 0 success, 1 an RPC error, 2 bad
// usage. Single-threaded, like the CLI.
class CommandContext {
 public:
  CommandContext(CtlOptions options, std::string token, ClientTls tls, std::string usage);

  const CtlOptions& options() const { return options_; }
  bool json() const { return options_.json; }
  // The positional arguments after the noun and the verb (set by Dispatch).
  const std::vector<std::string>& args() const { return args_; }
  void set_args(std::vector<std::string> args) { args_ = std::move(args); }

  // A channel to --scheduler / --registry; a TLS setup that cannot be read exits 2.
  std::shared_ptr<grpc::Channel> Scheduler();
  std::shared_ptr<grpc::Channel> Registry();

  // A client context with a 10 s deadline and the admin token.
  std::unique_ptr<grpc::ClientContext> Rpc() const;

  // Prints "jobwheelctl: <why>" and the usage to stderr; returns 2.
  int Usage(absl::string_view why) const;
  // Prints the RPC error (code and escaped message) to stderr; returns 1.
  int RpcError(const grpc::Status& status) const;
  // The first positional argument as a positive id; false when missing or not one.
  bool Id(int64_t* id) const;

 private:
  std::shared_ptr<grpc::Channel> Channel(const std::string& target);

  CtlOptions options_;
  std::vector<std::string> args_;
  std::string token_;
  ClientTls tls_;
  std::string usage_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;
};

// One command: the function that runs one RPC (or one small sequence of them) and prints it.
using CommandFn = int (*)(CommandContext& ctx);

struct Verb {
  absl::string_view name;
  CommandFn run;
};

// A noun and its verbs (`jobs list`, `jobs get ID`, ...). A noun that takes no verb
// (`leader`) has `run` instead of verbs. Each noun lives in its own <noun>_commands file.
struct Noun {
  absl::string_view name;
  std::vector<Verb> verbs;
  CommandFn run = nullptr;
};

// Runs the command `words` names (noun, verb, then the positional arguments) from `nouns`,
// with the positional arguments in `ctx`; a missing or unknown command is a usage error.
int Dispatch(const std::vector<Noun>& nouns, const std::vector<std::string>& words,
             CommandContext& ctx);

}  // namespace jobwheel::ctl

#endif  // JOBWHEEL_TOOLS_JOBWHEELCTL_COMMAND_H_
