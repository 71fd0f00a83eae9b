#ifndef JOBWHEEL_SDK_OPTIONS_H_
#define JOBWHEEL_SDK_OPTIONS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace jobwheel {

// Everything an Executor needs. Only `app` and `listen_address` have no usable default;
// tokens are required unless `insecure_dev` is set.
struct ExecutorOptions {
  // --- Identity and network ---
  // The executor group (jobs name it as their `app`).
  std::string app;
  // Where ExecutorService listens, e.g. "0.0.0.0:7200" or "127.0.0.1:0" (any free port).
  std::string listen_address = "127.0.0.1:7200";
  // The host:port dispatchers dial; empty means listen_address (with the bound port when
  // listening on port 0, and this host's name when listening on a wildcard address).
  std::string advertise_address;
  // The registry: a comma list of host:port ("127.0.0.1:7101,127.0.0.1:7111"), tried in
  // turn on failure, or one gRPC target with a scheme ("dns:///registry:7101").
  // Empty disables registration (the executor is then only reachable by manual address).
  std::string registry_target = "127.0.0.1:7101";
  // The dispatcher(s) receiving results: a host:port, a gRPC target ("dns:///d:7102",
  // "ipv4:10.0.0.1:7102,10.0.0.2:7102") or a comma list of ip:port (balanced round robin).
  // Empty keeps results spooled on disk until a later start with a target.
  std::string dispatcher_target = "127.0.0.1:7102";

  // --- Auth ---
  // Presented to the registry (Heartbeat) and dispatcher (ReportResults).
  std::string executor_token;
  // The public keys of ExecutorService's callers, as PEM text: each may hold several Ed25519
  // public keys (a key rotation lists the new key next to the old one). Callers present
  // tokens they sign for this executor's advertised address, valid for at most 60 s:
  // dispatchers (Run, RunBatch, Beat, IdleBeat, Kill) and the scheduler (Kill, Log). Public
  // keys only: the executor holds nothing another server accepts. Both required unless
  // insecure_dev.
  std::string dispatcher_public_keys;
  std::string scheduler_public_keys;
  // Accept unauthenticated calls and allow missing tokens. Development only, and only with
  // a loopback listen_address (127.0.0.1, [::1], localhost, unix:): Validate refuses it on
  // any address other hosts can reach.
  bool insecure_dev = false;

  // --- TLS (all empty: plaintext) ---
  std::string tls_cert_file;  // Server certificate for ExecutorService.
  std::string tls_key_file;
  std::string tls_client_ca_file;  // When set, callers must present a client certificate.
  std::string tls_ca_file;         // CA to verify registry/dispatcher; enables client TLS.
  // Client certificate for mutual TLS to the registry and dispatcher; empty: tls_cert_file
  // (and tls_key_file) double as the client certificate.
  std::string tls_client_cert_file;
  std::string tls_client_key_file;

  // --- Registration ---
  std::map<std::string, std::string> labels;
  int capacity = 16;  // Advertised to the registry; advisory.
  // Run GLUE_TYPE_SCRIPT_* jobs (shell via /bin/sh, python via python3). Off by default:
  // a script job is arbitrary code from whoever can edit jobs.
  bool allow_scripts = false;
  // Script jobs never see the executor's credentials or private data. Each runs in its own
  // mount namespace where log_dir, spool_dir and every path of script_hidden_paths are
  // covered (an empty read-only tmpfs over a directory, /dev/null over a file), its own work
  // directory excepted, and inherits no file descriptor but stdin/stdout/stderr. An executor
  // running as root then switches the script to `script_user` (a name or a numeric uid; never
  // uid 0 or gid 0; no supplementary groups; no_new_privs); one not running as root keeps its
  // uid in a new user namespace and makes itself non-dumpable (see docs/security.md). When
  // isolation cannot be set up the run fails ("script not run: cannot isolate it ..."): a
  // script never runs without it. Start fails when script_user is unknown or root.
  std::string script_user = "nobody";
  // Name the directories holding the executor's token, key and TLS key files (the demo
  // executor adds those of its *_file flags itself). Missing paths are skipped; "/" is refused.
  std::vector<std::string> script_hidden_paths;
  // A script reads its param as $JOBWHEEL_PARAM and its shard as $JOBWHEEL_SHARD_INDEX /
  // $JOBWHEEL_SHARD_TOTAL, and gets no arguments. Legacy switch for scripts written for
  // XXL-JOB's $1 $2 $3: also pass them as arguments. Off by default and best left off: a
  // process's arguments are readable by every local user (ps, /proc/<pid>/cmdline), its
  // environment only by its own uid and root.
  bool script_params_in_argv = false;

  // --- Files ---
  // Both directories are private to the executor's user: created 0700 (files in them 0600);
  // one owned by another user, or below a directory another user could change, is refused
  // at start. Relative paths are under the executor's working directory (its own
  // directory), never a shared /tmp path by default.
  // Run logs: day folders <log_dir>/<yyyy-mm-dd>/ of append-only segments (seg-<n>.log with
  // an index seg-<n>.idx; see docs/sdk.md); script sources: <log_dir>/scripts/; script
  // jobs' work directories: <log_dir>/work/.
  std::string log_dir = "jobwheel-executor/logs";
  // Day folders older than this are deleted (checked hourly). <= 0 keeps logs forever.
  int log_retention_days = 30;
  // Results not yet acknowledged by a dispatcher: an append-only journal, synced before they
  // are sent (see docs/sdk.md).
  std::string spool_dir = "jobwheel-executor/spool";

  // --- Runs ---
  // A run thread (shared by all jobs) exits after this long without runs.
  absl::Duration worker_idle_timeout = absl::Seconds(30);
  // After a run is cancelled (kill, timeout, cover), its result is reported when the handler
  // returns or after this long, whichever is first; a later handler result is dropped.
  absl::Duration cancel_grace = absl::Seconds(5);
  // Script jobs: SIGTERM to the process group, then SIGKILL after this long.
  absl::Duration script_kill_grace = absl::Seconds(2);
  std::string shell_binary = "/bin/sh";
  std::string python_binary = "python3";  // Looked up in PATH.

  // --- Heartbeat ---
  absl::Duration heartbeat_initial_backoff = absl::Milliseconds(100);
  absl::Duration heartbeat_max_backoff = absl::Seconds(2);

  // --- Shutdown ---
  // In-flight and queued runs get this long to finish; the rest fail "executor shut down".
  absl::Duration grace_period = absl::Seconds(10);
  // How long shutdown keeps trying to deliver spooled results (the rest stay spooled).
  absl::Duration result_flush_timeout = absl::Seconds(3);
  // Run() shuts down on SIGTERM/SIGINT.
  bool handle_signals = true;

  // --- Metrics ---
  // When set, the executor registers jobwheel_executor_* metrics here (see docs/metrics.md);
  // the embedding service exposes the registry.
  std::shared_ptr<prometheus::Registry> metrics_registry;

  // INVALID_ARGUMENT naming the first bad field.
  absl::Status Validate() const;
};

}  // namespace jobwheel

#endif  // JOBWHEEL_SDK_OPTIONS_H_
