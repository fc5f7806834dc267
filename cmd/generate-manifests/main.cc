// generate-manifests ROOT: rewrites the generated blocks of the manifests under the repository
// root ROOT (src/adapters/manifests.h) from the shipped backends' descriptors
// (src/adapters/shipped_backends.h). `make generate` runs it; a developer tool, not installed.
// Exit 0 when every file is written or already up to date, 1 on an error (naming the file), 2
// for a bad command line.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "adapters/manifests.h"
#include "adapters/shipped_backends.h"

namespace {

using namespace ayatori;  // NOLINT(google-build-using-namespace)

// 0 when `file` under `root` is written or already up to date; 1 after printing why not.
int Generate(const std::string& root, const std::string& file) {
  const std::string path = root + "/" + file;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::cerr << "generate-manifests: cannot read " << path << "\n";
    return 1;
  }
  auto generated = adapters::GenerateManifest(file, text.str(), adapters::ShippedDescriptors());
  if (!generated.ok()) {
    std::cerr << "generate-manifests: " << generated.status().message() << "\n";
    return 1;
  }
  if (*generated == text.str()) {
    std::cout << file << ": up to date\n";
    return 0;
  }
  std::ofstream out(path, std::ios::trunc);
  out << *generated;
  out.close();
  if (!out) {
    std::cerr << "generate-manifests: cannot write " << path << "\n";
    return 1;
  }
  std::cout << file << ": written\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: generate-manifests ROOT (the repository root)\n";
    return 2;
  }
  std::set<std::string> files;
  for (const auto& block : adapters::GeneratedBlocks()) files.insert(block.file);
  int exitCode = 0;
  for (const auto& file : files) exitCode = std::max(exitCode, Generate(argv[1], file));
  return exitCode;
}
