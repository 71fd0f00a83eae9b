// Embedding the executor in your own service: your own main, your own handler, Start()
// (non-blocking) and Shutdown() around your service's own lifetime.
//
//   bazel run //sdk/examples:embed_example -- 127.0.0.1:7300
//
// This example runs in insecure dev mode; a real service reads its tokens from files or a
// secret store and sets options.executor_token, options.dispatcher_public_keys and
// options.scheduler_public_keys (public keys only: the executor holds no caller's secret).

#include <csignal>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "jobwheel/executor.h"

namespace {

// Your service's own state, used by the handler.
struct Inventory {
  int items = 0;
};

absl::Notification* g_stop = nullptr;
void OnSignal(int) {
  // Notification::Notify is not async-signal-safe in general; a real service uses its own
  // shutdown mechanism. Good enough for an example.
  if (g_stop != nullptr && !g_stop->HasBeenNotified()) g_stop->Notify();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string listen = argc > 1 ? argv[1] : "127.0.0.1:7300";
  Inventory inventory;

  jobwheel::ExecutorOptions options;
  options.app = "inventory";
  options.listen_address = listen;
  options.registry_target = "127.0.0.1:7101";
  options.dispatcher_target = "127.0.0.1:7102";
  options.log_dir = "/tmp/inventory-executor/logs";
  options.spool_dir = "/tmp/inventory-executor/spool";
  options.insecure_dev = true;
  options.handle_signals = false;  // This service handles signals itself.

  jobwheel::Executor executor(options);
  absl::Status st = executor.Register("restock", [&inventory](jobwheel::JobContext& ctx) {
    for (int i = 0; i < 10; ++i) {
      if (ctx.cancelled()) return jobwheel::Result::Fail("cancelled");
      ++inventory.items;  // Do a slice of real work, then check for cancellation again.
      ctx.Logf("restocked item %d (shard %d/%d)", inventory.items, ctx.shard_index(),
               ctx.shard_total());
    }
    return jobwheel::Result::Ok(absl::StrCat("inventory now ", inventory.items));
  });
  if (!st.ok() || !(st = executor.Start()).ok()) {
    std::fprintf(stderr, "executor: %s\n", st.ToString().c_str());
    return 1;
  }
  std::printf("inventory service up; executor on %s\n", executor.advertise_address().c_str());

  // ... your service runs here (its own gRPC/HTTP server etc.) ...
  absl::Notification stop;
  g_stop = &stop;
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  stop.WaitForNotification();

  executor.Shutdown();  // Goodbye to the registry, finish in-flight runs, flush results.
  std::printf("inventory service down\n");
  return 0;
}
