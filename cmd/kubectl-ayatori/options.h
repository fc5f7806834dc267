// Command line of kubectl-ayatori (CLI11), parsed into a plain struct so flag handling is
// unit-tested without a server (test/kubectl-ayatori/options_test.cc). Flags follow kubectl:
// -n/--namespace, -A/--all-namespaces, -l/--selector, -o json|yaml|name|wide|jsonpath=..,
// --kubeconfig, --context.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ayatori/status.h"
#include "completion.h"

namespace ayatori::plugin {

// Exit codes (docs/kubectl-ayatori.md, "Exit codes").
inline constexpr int kExitOk = 0;            // done; for wait / run --wait: the Job Succeeded
inline constexpr int kExitError = 1;         // the request failed (not found, forbidden, ...)
inline constexpr int kExitUsage = 2;         // bad flags or arguments
inline constexpr int kExitJobFailed = 3;     // wait: the Job ended Failed
inline constexpr int kExitJobCancelled = 4;  // wait: the Job ended Cancelled
inline constexpr int kExitTimeout = 5;       // wait --timeout passed before the Job finished
inline constexpr int kExitJobDeleted = 6;    // wait: the Job was deleted before it finished

enum class Verb {
  kGet,
  kDescribe,
  kRun,
  kCancel,
  kWait,
  kConfirmLost,
  kLogs,
  kDelete,
  kVersion,
  kUi,          // ui: the web view (ui/server.h)
  kCompletion,  // completion bash|zsh|fish
  kComplete,    // __complete WORDS...: the shell scripts' question (completion.h)
};

struct Invocation {
  Verb verb = Verb::kGet;
  // Connection (every verb).
  std::string kubeconfig;  // --kubeconfig; "" = $KUBECONFIG, ~/.kube/config, in-cluster
  std::string context;     // --context
  std::string namespace_;  // -n; "" = the context's namespace, else "default"
  // get
  bool allNamespaces = false;  // -A
  std::string selector;        // -l
  std::string output;          // -o: "", wide, json, yaml, name, jsonpath=TEMPLATE (checked)
  std::string name;            // the Job (optional for get)
  bool watch = false;          // get -w: then a line per change, until interrupted
  // delete
  std::vector<std::string> names;  // the Jobs to delete
  bool all = false;                // --all: every Job of the namespace (or of -l)
  // version
  bool clientOnly = false;                             // --client: no request to the cluster
  std::string controllerNamespace = "ayatori-system";  // --controller-namespace
  // completion: the shell; __complete: the words typed so far (in `words`)
  std::string shell;
  // run
  std::string image;
  std::string jobClass;
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V, in order
  std::string cpu, memory;                               // limits; validated quantities
  std::optional<int64_t> deadlineSeconds;                // --deadline 10m
  std::optional<int32_t> ttlSeconds;                     // --ttl 1h
  bool command = false;            // --command: the words after -- replace the entrypoint
  std::vector<std::string> words;  // after --: args (or command with --command)
  bool wait = false;               // run --wait
  bool logs = false;               // run --logs
  // wait
  std::optional<std::chrono::seconds> timeout;  // --timeout; unset: no limit
  // confirm-lost
  bool yes = false;
  std::string reason;
  // logs
  bool follow = false;
  std::optional<int64_t> tailLines;
  std::optional<int64_t> sinceSeconds;
  // ui
  int port = 0;                       // --port; 0 = a free one
  std::string address = "127.0.0.1";  // --address; loopback only (checked as it binds)
  bool noBrowser = false;             // --no-browser: only print the URL
};

struct ParseOutcome {
  std::optional<Invocation> invocation;  // set: run it
  int exitCode = kExitOk;                // when not set: exit with this (help: 0, error: 2)
  std::string out;                       // help text, for stdout
  std::string err;                       // the error and what to do, for stderr
};

ParseOutcome ParseArgs(const std::vector<std::string>& args);  // without argv[0]

// The commands and their flags as the flag table declares them, for completion.
std::vector<CommandSpec> CommandSpecs();

// The duration grammar of src/base/duration.h ("90s", "10m", "1h30m") or a bare number of seconds
// ("600"); positive and whole seconds. kInvalidArgument naming the flag and the text otherwise.
StatusOr<std::chrono::seconds> ParseDurationFlag(const std::string& flag, const std::string& text);

}  // namespace ayatori::plugin
