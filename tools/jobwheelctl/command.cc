#include "tools/jobwheelctl/command.h"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "tools/jobwheelctl/terminal_text.h"

namespace jobwheel::ctl {

CommandContext::CommandContext(CtlOptions options, std::string token, ClientTls tls,
                               std::string usage)
    : options_(std::move(options)),
      token_(std::move(token)),
      tls_(std::move(tls)),
      usage_(std::move(usage)) {}

std::shared_ptr<grpc::Channel> CommandContext::Channel(const std::string& target) {
  auto it = channels_.find(target);
  if (it != channels_.end()) return it->second;
  auto c = MakeChannel(target, tls_);
  if (!c.ok()) {
    std::cerr << "jobwheelctl: " << c.status().message() << "\n";
    std::exit(2);
  }
  channels_.emplace(target, *c);
  return *c;
}

std::shared_ptr<grpc::Channel> CommandContext::Scheduler() { return Channel(options_.scheduler); }

std::shared_ptr<grpc::Channel> CommandContext::Registry() { return Channel(options_.registry); }

std::unique_ptr<grpc::ClientContext> CommandContext::Rpc() const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  AddBearer(*ctx, token_);
  return ctx;
}

int CommandContext::Usage(absl::string_view why) const {
  std::cerr << "jobwheelctl: " << why << "\n" << usage_ << "\n";
  return 2;
}

int CommandContext::RpcError(const grpc::Status& status) const {
  std::cerr << "jobwheelctl: " << status.error_code() << " "
            << EscapeForTerminal(status.error_message()) << "\n";
  return 1;
}

bool CommandContext::Id(int64_t* id) const {
  return !args_.empty() && absl::SimpleAtoi(args_[0], id) && *id > 0;
}

int Dispatch(const std::vector<Noun>& nouns, const std::vector<std::string>& words,
             CommandContext& ctx) {
  if (words.empty()) return ctx.Usage("missing command");
  const Noun* noun = nullptr;
  for (const Noun& n : nouns) {
    if (n.name == words[0]) noun = &n;
  }
  if (noun != nullptr && noun->run != nullptr) {
    ctx.set_args({words.begin() + 1, words.end()});
    return noun->run(ctx);
  }
  if (words.size() < 2) return ctx.Usage("missing command");
  const std::string& verb = words[1];
  if (noun == nullptr) return ctx.Usage(absl::StrCat("unknown command ", words[0], " ", verb));
  for (const Verb& v : noun->verbs) {
    if (v.name == verb) {
      ctx.set_args({words.begin() + 2, words.end()});
      return v.run(ctx);
    }
  }
  // A noun of one verb reads as one command (`apps list`); the others name their verbs.
  if (noun->verbs.size() == 1) {
    return ctx.Usage(absl::StrCat("unknown command ", words[0], " ", verb));
  }
  return ctx.Usage(absl::StrCat("unknown ", words[0], " command ", verb));
}

}  // namespace jobwheel::ctl
