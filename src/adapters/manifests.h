// The blocks of the committed manifests in config/ that name the shipped backends, written from
// their descriptors by `make generate` (cmd/generate-manifests; the unit test
// adapters_manifests_test fails when a committed block differs from what it writes). A block is
// the lines between a `# BEGIN GENERATED <name>` line and its `# END GENERATED <name>` line,
// indented as the BEGIN line; the rest of each file is written by hand.
#pragma once

#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "ayatori/status.h"

namespace ayatori::adapters {

// A generated block of a committed manifest.
struct GeneratedBlock {
  std::string file;  // relative to the repository root
  std::string name;  // of its BEGIN GENERATED / END GENERATED lines
};

// Every generated block:
//  - parameters-resources in config/rbac/role.yaml and config/namespaced/rbac.yaml: the resources
//    of the ClusterRole rule for the informers (list, watch), jobclasses and every parameters
//    resource;
//  - jobclass-parameters-rules in config/crd/execution.ayatori.ddupan.top_jobclasses.yaml: for
//    every descriptor with a parameters kind, the CEL rule of the JobClass spec that a class for
//    its controllerName names that kind (and names one, with parametersRequiredBecause).
const std::vector<GeneratedBlock>& GeneratedBlocks();

// The lines of block `name` for `descriptors`, without the BEGIN/END lines and unindented.
// kInvalidArgument for an unknown block, a parameters kind of a group other than
// execution.ayatori.ddupan.top (its informer needs a rule of its own), or a name or reason with a
// character the YAML and CEL strings cannot hold as written (a quote, a backslash, a newline).
StatusOr<std::vector<std::string>> GeneratedLines(
    const std::string& name, const std::vector<AdapterDescriptor>& descriptors);

// `text` with the lines inside its one block `name` replaced by `lines`, indented as the block's
// BEGIN line; nothing else changes. kInvalidArgument, naming the line, when the block is missing,
// there twice, or has no END line.
StatusOr<std::string> ReplaceGeneratedBlock(const std::string& text, const std::string& name,
                                            const std::vector<std::string>& lines);

// `text`, the committed content of `file` (relative to the repository root), with every block of
// GeneratedBlocks() in that file written from `descriptors`: what `make generate` writes there.
StatusOr<std::string> GenerateManifest(const std::string& file, const std::string& text,
                                       const std::vector<AdapterDescriptor>& descriptors);

}  // namespace ayatori::adapters
