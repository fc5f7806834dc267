#include "options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <sstream>

#include "api/quantity.h"
#include "base/duration.h"
#include "format.h"

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
  std::chrono::milliseconds d{};
  // A bare whole number is seconds (as activeDeadlineSeconds and ttlSecondsAfterFinished are);
  // anything else is the one duration grammar (src/base/duration.h).
  if (!text.empty() && text.size() <= 9 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    d = std::chrono::seconds(std::stoll(text));
  } else {
    auto parsed = base::ParseDuration(text);
    if (!parsed.ok()) {
      return Status(StatusCode::kInvalidArgument,
                    flag + " " + parsed.status().message() + " or a number of seconds");
    }
    d = *parsed;
  }
  if (d.count() <= 0) {
    return Status(StatusCode::kInvalidArgument, flag + " \"" + text + "\" must be positive");
  }
  if (d.count() % 1000 != 0) {
    return Status(StatusCode::kInvalidArgument,
                  flag + " \"" + text + "\" must be a whole number of seconds");
  }
  return std::chrono::duration_cast<std::chrono::seconds>(d);
}

namespace {

// The flags whose text ParseArgs checks and converts after parsing (durations, NAME=VALUE).
struct RawFlags {
  std::string deadline, ttl, timeout, since;
  std::vector<std::string> env;
  int64_t tail = -1;
};

// The flag table: the verbs and their flags, into `inv` and `raw`.
void AddFlags(CLI::App& app, Invocation& inv, RawFlags& raw) {
  app.require_subcommand(1);
  app.fallthrough();  // connection flags may follow the verb, as with kubectl
  app.add_option("--kubeconfig", inv.kubeconfig,
                 "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)");
  app.add_option("--context", inv.context, "kubeconfig context (default: current-context)");
  app.add_option("-n,--namespace", inv.namespace_,
                 "namespace (default: the context's namespace, else default)");

  auto& [deadline, ttl, timeout, since, envFlags, tail] = raw;

  auto* get = app.add_subcommand("get", "list Jobs, or show one, with their derived state");
  get->add_option("name", inv.name, "Job name (default: every Job of the namespace)");
  get->add_flag("-A,--all-namespaces", inv.allNamespaces, "Jobs of every namespace");
  get->add_option("-l,--selector", inv.selector, "label selector, e.g. team=ci,tier!=batch");
  get->add_option("-o,--output", inv.output, "json|yaml|name|wide|jsonpath=TEMPLATE");
  get->add_flag("-w,--watch", inv.watch,
                "after the list, print each change (a row, or an object in the -o format) until "
                "interrupted");

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

  auto* del = app.add_subcommand(
      "delete", "delete Jobs: delete NAME... | --all | -l SELECTOR (the execution is stopped)");
  del->add_option("names", inv.names, "Job names");
  del->add_flag("--all", inv.all, "every Job of the namespace");
  del->add_option("-l,--selector", inv.selector, "the Jobs whose labels match, e.g. team=ci");

  auto* version =
      app.add_subcommand("version", "the plugin's version and the controller's (from the cluster)");
  version->add_flag("--client", inv.clientOnly, "only the plugin's version; no cluster needed");
  version->add_option("--controller-namespace", inv.controllerNamespace,
                      "the namespace the controller runs in (default: ayatori-system)");

  auto* completion = app.add_subcommand(
      "completion", "print a shell completion script: source <(kubectl-ayatori completion bash)");
  completion->add_option("shell", inv.shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));

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

  auto* ui = app.add_subcommand(
      "ui", "serve a web view of the Jobs on this machine and print its URL (Ctrl-C stops it)");
  ui->add_flag("-A,--all-namespaces", inv.allNamespaces, "start with the Jobs of every namespace");
  ui->add_option("--port", inv.port, "port to listen on (default 0: a free one)")
      ->check(CLI::Range(0, 65535));
  ui->add_option("--address", inv.address,
                 "loopback address to listen on: 127.0.0.1 (default) or ::1");
  ui->add_flag("--no-browser", inv.noBrowser, "do not open a browser; only print the URL");

  auto* logs = app.add_subcommand("logs", "print a Job's output through the jobs/log API");
  logs->add_option("name", inv.name, "Job name")->required();
  logs->add_flag("-f,--follow", inv.follow, "stream until the execution ends");
  logs->add_option("--tail", tail, "only the last N lines")->check(CLI::NonNegativeNumber);
  logs->add_option("--since", since, "only lines newer than this, e.g. 5m");
}

// --help: CLI11's text on stdout.
ParseOutcome HelpOutcome(const CLI::App& app, const CLI::Error& e) {
  ParseOutcome o;
  std::ostringstream out, err;
  o.exitCode = app.exit(e, out, err);
  o.out = out.str();
  return o;
}

// A flag CLI11 refused, or a missing or unknown verb.
ParseOutcome ParseErrorOutcome(const CLI::App& app, const CLI::ParseError& e,
                               const std::vector<std::string>& args) {
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
                          "\": use one of get, describe, run, delete, cancel, wait, confirm-lost, "
                          "logs, ui, version, completion");
      }
    }
  }
  std::string what = e.what();
  if (what.empty()) what = e.get_name();
  return UsageError(what);
}

Verb VerbNamed(const std::string& verb) {
  if (verb == "describe") return Verb::kDescribe;
  if (verb == "run") return Verb::kRun;
  if (verb == "cancel") return Verb::kCancel;
  if (verb == "wait") return Verb::kWait;
  if (verb == "confirm-lost") return Verb::kConfirmLost;
  if (verb == "logs") return Verb::kLogs;
  if (verb == "delete") return Verb::kDelete;
  if (verb == "version") return Verb::kVersion;
  if (verb == "completion") return Verb::kCompletion;
  if (verb == "ui") return Verb::kUi;
  return Verb::kGet;
}

// --env NAME=VALUE, --cpu and --memory quantities.
Status ApplyTaskFlags(const RawFlags& raw, Invocation* inv) {
  for (const auto& e : raw.env) {
    auto eq = e.find('=');
    if (eq == std::string::npos || eq == 0) {
      return {StatusCode::kInvalidArgument, "--env \"" + e + "\" must be NAME=VALUE"};
    }
    inv->env.emplace_back(e.substr(0, eq), e.substr(eq + 1));
  }
  for (const auto& [flag, value] : {std::pair{"--cpu", inv->cpu}, {"--memory", inv->memory}}) {
    if (value.empty()) continue;
    auto q = api::Quantity::Parse(value);
    if (!q.ok())
      return {StatusCode::kInvalidArgument, std::string(flag) + ": " + q.status().message()};
  }
  return Status::Ok();
}

// --deadline, --ttl, --timeout, --since and --tail.
Status ApplyTimeFlags(const RawFlags& raw, Invocation* inv) {
  if (!raw.deadline.empty()) {
    auto d = ParseDurationFlag("--deadline", raw.deadline);
    if (!d.ok()) return d.status();
    inv->deadlineSeconds = d->count();
  }
  if (!raw.ttl.empty()) {
    auto d = ParseDurationFlag("--ttl", raw.ttl);
    if (!d.ok()) return d.status();
    if (d->count() > INT32_MAX) {
      return {StatusCode::kInvalidArgument, "--ttl \"" + raw.ttl + "\" is too long"};
    }
    inv->ttlSeconds = static_cast<int32_t>(d->count());
  }
  if (!raw.timeout.empty()) {
    auto d = ParseDurationFlag("--timeout", raw.timeout);
    if (!d.ok()) return d.status();
    inv->timeout = *d;
  }
  if (!raw.since.empty()) {
    auto d = ParseDurationFlag("--since", raw.since);
    if (!d.ok()) return d.status();
    inv->sinceSeconds = d->count();
  }
  if (raw.tail >= 0) inv->tailLines = raw.tail;
  return Status::Ok();
}

// The flags' text converted into `inv`, and the combinations refused; the first problem.
Status Complete(const RawFlags& raw, Invocation* inv) {
  if (inv->allNamespaces && !inv->name.empty()) {
    return {StatusCode::kInvalidArgument,
            "a Job name cannot be combined with -A: name its namespace with -n"};
  }
  if (inv->allNamespaces && !inv->namespace_.empty()) {
    return {StatusCode::kInvalidArgument, "-n and -A cannot be combined: use one of them"};
  }
  if (auto format = ParseOutputFormat(inv->output); !format.ok()) return format.status();
  if (Status s = ApplyTaskFlags(raw, inv); !s.ok()) return s;
  if (Status s = ApplyTimeFlags(raw, inv); !s.ok()) return s;
  if (inv->logs) inv->wait = true;
  if (inv->verb == Verb::kDelete) {
    const int ways =
        (inv->names.empty() ? 0 : 1) + (inv->all ? 1 : 0) + (inv->selector.empty() ? 0 : 1);
    if (ways != 1) {
      return {StatusCode::kInvalidArgument,
              "delete takes Job names, --all or -l SELECTOR (one of them): e.g. "
              "kubectl ayatori delete hello"};
    }
  }
  if (inv->verb == Verb::kRun && inv->command && inv->words.empty()) {
    return {StatusCode::kInvalidArgument,
            "--command needs the command after --, e.g. -- /bin/sh -c 'echo hi'"};
  }
  return Status::Ok();
}

}  // namespace

std::vector<CommandSpec> CommandSpecs() {
  Invocation inv;
  RawFlags raw;
  CLI::App app;
  AddFlags(app, inv, raw);
  std::vector<std::string> connection;
  auto addNames = [](const CLI::Option& o, std::vector<std::string>& to) {
    auto add = [&](const std::string& name) {
      if (std::find(to.begin(), to.end(), name) == to.end()) to.push_back(name);
    };
    for (const auto& s : o.get_snames()) add("-" + s);
    for (const auto& l : o.get_lnames()) add("--" + l);
  };
  for (const CLI::Option* o : app.get_options()) {
    if (o->nonpositional()) addNames(*o, connection);
  }
  std::vector<CommandSpec> specs;
  for (const CLI::App* sub : app.get_subcommands({})) {
    CommandSpec spec{sub->get_name(), {}, false};
    for (const CLI::Option* o : sub->get_options()) {
      if (o->nonpositional()) {
        addNames(*o, spec.flags);
      } else if (sub->get_name() != "run") {  // run's name is a new Job's
        spec.takesJobName =
            spec.takesJobName || o->get_name() == "name" || o->get_name() == "names";
      }
    }
    for (const auto& flag : connection) {
      if (std::find(spec.flags.begin(), spec.flags.end(), flag) == spec.flags.end()) {
        spec.flags.push_back(flag);
      }
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

ParseOutcome ParseArgs(const std::vector<std::string>& args) {
  Invocation inv;
  RawFlags raw;
  if (!args.empty() && args.front() == "__complete") {
    // Not a command for people (no help, no checks): the completion scripts' question.
    inv.verb = Verb::kComplete;
    inv.words.assign(args.begin() + 1, args.end());
    ParseOutcome o;
    o.invocation = std::move(inv);
    return o;
  }
  CLI::App app{
      "kubectl ayatori: run and inspect execution.ayatori.ddupan.top Jobs.\n"
      "Reference: docs/kubectl-ayatori.md",
      "kubectl ayatori"};
  AddFlags(app, inv, raw);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return HelpOutcome(app, e);
  } catch (const CLI::CallForAllHelp& e) {
    return HelpOutcome(app, e);
  } catch (const CLI::ParseError& e) {
    return ParseErrorOutcome(app, e, args);
  }
  inv.verb = VerbNamed(app.get_subcommands().front()->get_name());
  if (Status s = Complete(raw, &inv); !s.ok()) return UsageError(s.message());
  ParseOutcome o;
  o.invocation = std::move(inv);
  return o;
}

}  // namespace ayatori::plugin
