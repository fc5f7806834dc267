#include "options.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <sstream>

#include "api/quantity.h"

namespace ayatori::plugin {

namespace {

constexpr const char* kUsageHint = "\nSee 'kubectl ayatori --help' for usage.";

ParseOutcome UsageError(const std::string& message) {
  ParseOutcome o;
  o.exitCode = kExitUsage;
  o.err = "error: " + message + kUsageHint + "\n";
  return o;
}

}  // namespace

StatusOr<std::chrono::seconds> ParseDurationFlag(const std::string& flag, const std::string& text) {
  auto bad = [&] {
    return Status(StatusCode::kInvalidArgument,
                  flag + " \"" + text +
                      "\" is not a duration: use e.g. 90s, 10m, 1h30m or a number of seconds");
  };
  if (text.empty()) return bad();
  int64_t total = 0;
  size_t i = 0;
  bool plain = true;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) != 0) ++i;
    if (i == start || i - start > 9) return bad();
    int64_t n = std::stoll(text.substr(start, i - start));
    if (i == text.size()) {
      if (!plain && start != 0) return bad();  // "1h30" is ambiguous
      total += n;
      break;
    }
    plain = false;
    char unit = text[i++];
    if (unit == 'h') {
      total += n * 3600;
    } else if (unit == 'm') {
      total += n * 60;
    } else if (unit == 's') {
      total += n;
    } else {
      return bad();
    }
  }
  if (total <= 0) {
    return Status(StatusCode::kInvalidArgument, flag + " \"" + text + "\" must be positive");
  }
  return std::chrono::seconds(total);
}

ParseOutcome ParseArgs(const std::vector<std::string>& args) {
  Invocation inv;
  CLI::App app{
      "kubectl ayatori: run and inspect execution.ayatori.ddupan.top Jobs.\n"
      "Reference: docs/kubectl-ayatori.md",
      "kubectl ayatori"};
  app.require_subcommand(1);
  app.fallthrough();  // connection flags may follow the verb, as with kubectl
  app.add_option("--kubeconfig", inv.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)");
  app.add_option("--context", inv.context, "kubeconfig context (default: current-context)");
  app.add_option("-n,--namespace", inv.namespace_,
                 "namespace (default: the context's namespace, else default)");

  std::string deadline, ttl, timeout, since;
  std::vector<std::string> envFlags;
  int64_t tail = -1;

  auto* get = app.add_subcommand("get", "list Jobs, or show one, with their derived state");
  get->add_option("name", inv.name, "Job name (default: every Job of the namespace)");
  get->add_flag("-A,--all-namespaces", inv.allNamespaces, "Jobs of every namespace");
  get->add_option("-l,--selector", inv.selector, "label selector, e.g. team=ci,tier!=batch");
  get->add_option("-o,--output", inv.output, "wide|json|yaml")
      ->check(CLI::IsMember({"wide", "json", "yaml"}));

  auto* describe = app.add_subcommand(
      "describe", "conditions, derived state and why, class, resources, execution, Events");
  describe->add_option("name", inv.name, "Job name")->required();

  auto* run = app.add_subcommand("run", "create a Job: run NAME --image IMAGE [flags] -- ARGS...");
  run->add_option("name", inv.name, "Job name")->required();
  run->add_option("words", inv.words,
                  "after --: arguments of the image's entrypoint (the command with --command)");
  run->add_option("--image", inv.image, "OCI image reference")->required();
  run->add_option("--class", inv.jobClass, "JobClass (default: the namespace's or cluster's)");
  run->add_option("--env", envFlags, "environment variable NAME=VALUE (repeatable)");
  run->add_option("--cpu", inv.cpu, "cpu limit, e.g. 500m (the request defaults to it)");
  run->add_option("--memory", inv.memory, "memory limit, e.g. 256Mi (the request defaults to it)");
  run->add_option("--deadline", deadline,
                  "activeDeadlineSeconds as a duration, e.g. 10m (counts from the start)");
  run->add_option("--ttl", ttl, "delete the Job this long after it finished, e.g. 1h");
  run->add_flag("--command", inv.command, "the words after -- replace the image's entrypoint");
  run->add_flag("--wait", inv.wait, "wait until the Job finished; exit code as for wait");
  run->add_flag("--logs", inv.logs, "follow the Job's logs (implies --wait)");
  run->add_option("--timeout", timeout, "with --wait: give up after this long, e.g. 10m");

  auto* cancel =
      app.add_subcommand("cancel", "ask the controller to stop a Job (spec.desiredState)");
  cancel->add_option("name", inv.name, "Job name")->required();

  auto* wait = app.add_subcommand("wait", "wait until a Job finished; the exit code says how");
  wait->add_option("name", inv.name, "Job name")->required();
  wait->add_option("--timeout", timeout, "give up after this long, e.g. 10m (default: no limit)");

  auto* confirm = app.add_subcommand(
      "confirm-lost",
      "confirm that the execution of a ResultUnknown Job is lost for good (it then fails)");
  confirm->add_option("name", inv.name, "Job name")->required();
  confirm->add_flag("-y,--yes", inv.yes, "do not ask for confirmation");
  confirm->add_option("--reason", inv.reason, "who confirms and why (stored in the annotation)");

  auto* logs = app.add_subcommand("logs", "print a Job's output through the jobs/log API");
  logs->add_option("name", inv.name, "Job name")->required();
  logs->add_flag("-f,--follow", inv.follow, "stream until the execution ends");
  logs->add_option("--tail", tail, "only the last N lines")->check(CLI::NonNegativeNumber);
  logs->add_option("--since", since, "only lines newer than this, e.g. 5m");

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    ParseOutcome o;
    std::ostringstream out, err;
    o.exitCode = app.exit(e, out, err);
    o.out = out.str();
    return o;
  } catch (const CLI::CallForAllHelp& e) {
    ParseOutcome o;
    std::ostringstream out, err;
    o.exitCode = app.exit(e, out, err);
    o.out = out.str();
    return o;
  } catch (const CLI::ParseError& e) {
    if (app.get_subcommands().empty()) {
      // CLI11 says only "A subcommand is required": name the word it did not know.
      for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-n" || a == "--namespace" || a == "--kubeconfig" || a == "--context") {
          ++i;
          continue;
        }
        if (!a.empty() && a[0] != '-') {
          return UsageError("unknown command \"" + a +
                            "\": use one of get, describe, run, cancel, wait, confirm-lost, logs");
        }
      }
    }
    std::string what = e.what();
    if (what.empty()) what = e.get_name();
    return UsageError(what);
  }

  const CLI::App* chosen = app.get_subcommands().front();
  const std::string verb = chosen->get_name();
  if (verb == "get") inv.verb = Verb::kGet;
  if (verb == "describe") inv.verb = Verb::kDescribe;
  if (verb == "run") inv.verb = Verb::kRun;
  if (verb == "cancel") inv.verb = Verb::kCancel;
  if (verb == "wait") inv.verb = Verb::kWait;
  if (verb == "confirm-lost") inv.verb = Verb::kConfirmLost;
  if (verb == "logs") inv.verb = Verb::kLogs;

  if (inv.allNamespaces && !inv.name.empty()) {
    return UsageError("a Job name cannot be combined with -A: name its namespace with -n");
  }
  if (inv.allNamespaces && !inv.namespace_.empty()) {
    return UsageError("-n and -A cannot be combined: use one of them");
  }
  for (const auto& e : envFlags) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      return UsageError("--env \"" + e + "\" must be NAME=VALUE");
    }
    inv.env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  for (const auto& [flag, value] : {std::pair{"--cpu", inv.cpu}, {"--memory", inv.memory}}) {
    if (value.empty()) continue;
    auto q = api::Quantity::Parse(value);
    if (!q.ok()) return UsageError(std::string(flag) + ": " + q.status().message());
  }
  if (!deadline.empty()) {
    auto d = ParseDurationFlag("--deadline", deadline);
    if (!d.ok()) return UsageError(d.status().message());
    inv.deadlineSeconds = d->count();
  }
  if (!ttl.empty()) {
    auto d = ParseDurationFlag("--ttl", ttl);
    if (!d.ok()) return UsageError(d.status().message());
    if (d->count() > INT32_MAX) return UsageError("--ttl \"" + ttl + "\" is too long");
    inv.ttlSeconds = static_cast<int32_t>(d->count());
  }
  if (!timeout.empty()) {
    auto d = ParseDurationFlag("--timeout", timeout);
    if (!d.ok()) return UsageError(d.status().message());
    inv.timeout = *d;
  }
  if (!since.empty()) {
    auto d = ParseDurationFlag("--since", since);
    if (!d.ok()) return UsageError(d.status().message());
    inv.sinceSeconds = d->count();
  }
  if (tail >= 0) inv.tailLines = tail;
  if (inv.logs) inv.wait = true;
  if (inv.verb == Verb::kRun && inv.command && inv.words.empty()) {
    return UsageError("--command needs the command after --, e.g. -- /bin/sh -c 'echo hi'");
  }
  ParseOutcome o;
  o.invocation = std::move(inv);
  return o;
}

}  // namespace ayatori::plugin
