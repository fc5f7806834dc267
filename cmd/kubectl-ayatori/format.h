// What kubectl-ayatori prints, as pure functions of the objects read from the API server and the
// current time (no I/O, no clock reads), so the columns and their widths are unit-tested
// (test/kubectl-ayatori/format_test.cc). The state of a Job is never computed here: it is the
// state machine's DeriveState (src/statemachine/statemachine.h).
#pragma once

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "ayatori/status.h"
#include "jsonpath.h"
#include "statemachine/statemachine.h"

namespace ayatori::plugin {

// kubectl's age (k8s.io/apimachinery/pkg/util/duration.HumanDuration): "45s", "3m12s", "4h5m",
// "12d", "2y31d". A time in the future by more than a second is "<invalid>", as kubectl prints.
std::string FormatAge(std::chrono::seconds age);

// Rows of cells aligned like kubectl's tabwriter (minimum width 6, padding 3, no trailing blanks).
std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

// The reason that explains a Job's derived state: the Accepted reason while Resolving (what it
// waits for), else the Succeeded reason (Running, ResultUnknown, ProcessFailed, ...); "" if none.
std::string StateReason(const api::Job& job, statemachine::State state);

// One sentence for `describe`: why the Job is in `state`, from the condition that decides it.
std::string ExplainState(const api::Job& job, statemachine::State state);

// Where the queued Jobs stand in their Kueue LocalQueues: for each LocalQueue that Kueue's
// visibility API answered for, as "namespace/queue", the 0-based positionInLocalQueue of each
// pending Workload by its name (the Workload of a Job: kueue::WorkloadName, src/kueue/workload.h).
// A LocalQueue that was not asked or did not answer is absent: no position is known.
using QueuePositions = std::map<std::string, std::map<std::string, int64_t>>;

// "namespace/queue": the key of a Job's LocalQueue in QueuePositions ("" if it names none).
std::string QueueKey(const api::Job& job);

// Where a Job that names a LocalQueue stands: 1-based, as describe and get print it (1 = the
// next to be admitted); nullopt when it is not queued or its position is unknown.
std::optional<int64_t> QueuePosition(const api::Job& job, const QueuePositions& positions);

// describe's "Queue:" value: "position 3 in LocalQueue x", "admitted by LocalQueue x",
// "waiting in LocalQueue x, position unknown: <why>" (`unknownWhy`: why no position is known,
// e.g. the visibility API is not served), or "LocalQueue x" before the Job is queued.
std::string QueueText(const api::Job& job, const QueuePositions& positions,
                      const std::string& unknownWhy);

struct GetOptions {
  bool wide = false;
  bool withNamespace = false;  // -A: a NAMESPACE column first
  // QUEUE and POSITION columns after CLASS: set when any listed Job names a LocalQueue.
  bool queue = false;
  QueuePositions positions = {};  // for POSITION; empty: no position is known
};

// The columns of `get`'s table and the cells of one Job's row, unaligned: what FormatJobTable
// renders, and what the web view (ui/api.h) serves as JSON, so both show the same derivation.
std::vector<std::string> JobTableHeader(const GetOptions& options);
std::vector<std::string> JobRowCells(const api::Job& job, const GetOptions& options, api::Time now);

// `get` as a table: NAME STATE CLASS REASON EXIT AGE (with options.queue: NAME STATE CLASS QUEUE
// POSITION REASON EXIT AGE); wide adds DESIRED STARTED ADAPTER BACKEND
// (the kinds of the execution's references, never ids, endpoints or credentials).
std::string FormatJobTable(const std::vector<api::Job>& jobs, const GetOptions& options,
                           api::Time now);

// `-o json` / `-o yaml` of objects as the API server returned them, without
// metadata.managedFields (as kubectl prints them). Several objects make a v1 List.
nlohmann::json OutputDocument(const std::vector<nlohmann::json>& objects, bool single);
std::string ToJsonText(const nlohmann::json& doc);  // 4-space indent, like kubectl
std::string ToYamlText(const nlohmann::json& doc);  // strings that YAML would misread are quoted

// `-o`: the table (""), wide, json, yaml, name or jsonpath=TEMPLATE.
struct OutputFormat {
  enum class Kind { kTable, kWide, kJson, kYaml, kName, kJsonPath };
  Kind kind = Kind::kTable;
  std::optional<JsonPathTemplate> jsonPath;  // kJsonPath
  bool Table() const { return kind == Kind::kTable || kind == Kind::kWide; }
};
// kInvalidArgument naming the accepted values, or what the template does wrong.
StatusOr<OutputFormat> ParseOutputFormat(std::string_view text);

// The objects in a format that is not a table (!format.Table()): json and yaml print
// OutputDocument; name prints job.execution.ayatori.ddupan.top/NAME, a line each; jsonpath
// applies the template to OutputDocument (a List of several objects, as kubectl does).
std::string FormatObjects(const OutputFormat& format, const std::vector<nlohmann::json>& objects,
                          bool single);

// One Job as a row of FormatJobTable, without the header: what `get -w` prints for a change. The
// widths are those of the header and this row, so the row lines up under the first table as long
// as its cells are no wider than the table's.
std::string FormatJobRow(const api::Job& job, const GetOptions& options, api::Time now);

// What `get -w` prints for a changed object in a format that is not a table: FormatObjects of
// the object alone, YAML documents separated by "---" as kubectl prints them.
std::string FormatWatchedObject(const OutputFormat& format, const nlohmann::json& object);

// "Client Version: 0.1.0 (commit 1a2b3c4d5e6f)" for `version`; `who` is "Client" or
// "Controller"; the commit is left out when "" or "unknown".
std::string VersionLine(const std::string& who, const std::string& version,
                        const std::string& commit);

// One Event for `describe` (a core/v1 Event as the API serves it, also for events.k8s.io writes).
struct EventLine {
  std::string type;  // Normal, Warning
  std::string reason;
  std::string from;  // reportingComponent / source.component
  std::string message;
  int64_t count = 1;
  std::optional<api::Time> last;  // lastTimestamp, series.lastObservedTime or eventTime
};
EventLine EventLineFromJson(const nlohmann::json& event);

// `describe`: conditions, derived state and why, class, task (env values are never printed, only
// where they come from), effective resources, execution references, times, result and the most
// recent Events (oldest first, at most `maxEvents`). A Job that names a LocalQueue has a
// "Queue:" line (QueueText of `queue`).
inline constexpr size_t kDescribeEvents = 20;
struct DescribeQueue {
  QueuePositions positions;
  std::string unknownWhy;
};
std::string FormatDescribe(const api::Job& job, std::vector<EventLine> events, api::Time now,
                           size_t maxEvents = kDescribeEvents, const DescribeQueue& queue = {});

}  // namespace ayatori::plugin
