// The metric catalog (src/obs/metrics_catalog.h): unique, well-formed names; every metric
// documented in docs/operations.md; no metric name written anywhere else in src/ or cmd/, so
// that every call site refers to a declaration. Reads the source tree ($AYATORI_SOURCE_DIR) only.
#include "obs/metrics_catalog.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "obs/metrics.h"

namespace ayatori::obs {
namespace {

std::string SourceDir() {
  const char* dir = std::getenv("AYATORI_SOURCE_DIR");
  EXPECT_NE(dir, nullptr) << "AYATORI_SOURCE_DIR is not set (ctest sets it)";
  return dir != nullptr ? dir : "";
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MetricsCatalogTest, NamesAreUniqueAndFollowPrometheusConventions) {
  std::set<std::string_view> names;
  const std::regex form("ayatori_[a-z][a-z_]*[a-z]");
  for (const MetricDef* def : kMetricCatalog) {
    ASSERT_NE(def, nullptr);
    EXPECT_TRUE(names.insert(def->name).second) << def->name << " is declared twice";
    EXPECT_TRUE(std::regex_match(std::string(def->name), form)) << def->name;
    EXPECT_FALSE(def->help.empty()) << def->name;
    const bool total = def->name.ends_with("_total");
    EXPECT_EQ(total, def->type == MetricType::kCounter)
        << def->name << ": counters, and only counters, end in _total";
    if (def->type == MetricType::kHistogram) {
      EXPECT_TRUE(def->name.ends_with("_seconds")) << def->name;
    }
  }
}

TEST(MetricsCatalogTest, EveryDeclarationIsInTheCatalog) {
  const std::string header = ReadFile(SourceDir() + "/src/obs/metrics_catalog.h");
  const std::regex declaration("inline constexpr MetricDef k");
  const auto count = std::distance(std::sregex_iterator(header.begin(), header.end(), declaration),
                                   std::sregex_iterator());
  EXPECT_EQ(static_cast<std::size_t>(count), kMetricCatalog.size())
      << "a MetricDef declared in metrics_catalog.h is missing from kMetricCatalog";
}

TEST(MetricsCatalogTest, EveryMetricIsDocumentedInOperationsMd) {
  const std::string doc = ReadFile(SourceDir() + "/docs/operations.md");
  for (const MetricDef* def : kMetricCatalog) {
    // Written as code: `name` or `name{labels}`.
    const std::string name(def->name);
    EXPECT_TRUE(doc.find("`" + name + "`") != std::string::npos ||
                doc.find("`" + name + "{") != std::string::npos)
        << name << " is not documented in docs/operations.md (\"Health and metrics\")";
    for (std::string_view rest = def->labels; !rest.empty();) {
      const std::string label(rest.substr(0, rest.find(',')));
      rest.remove_prefix(std::min(rest.size(), label.size() + 1));
      EXPECT_NE(doc.find("`" + name + "{"), std::string::npos)
          << name << " has the label " << label << ": document it as `" << name << "{...}`";
    }
  }
}

TEST(MetricsCatalogTest, NoMetricNameIsWrittenOutsideTheCatalog) {
  const std::regex literal("\"ayatori_[a-z_]+");
  for (const char* top : {"src", "cmd"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(SourceDir() + "/" + top)) {
      const auto ext = entry.path().extension();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      if (entry.path().filename() == "metrics_catalog.h") continue;
      const std::string text = ReadFile(entry.path());
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, literal))
          << entry.path() << " writes the metric name " << m.str()
          << "\": declare it in src/obs/metrics_catalog.h and pass the declaration";
    }
  }
}

TEST(MetricsCatalogTest, TheRegistryRendersTheDeclaredHelpAndType) {
  Registry r;
  r.GetCounter(metrics::kApiRequests, {{"verb", "GET"}, {"code", "200"}}).Inc();
  r.GetGauge(metrics::kLeader).Set(1);
  const std::string text = r.Render();
  EXPECT_NE(text.find("# HELP ayatori_api_requests_total Requests to the Kubernetes API.\n"
                      "# TYPE ayatori_api_requests_total counter\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE ayatori_leader gauge\nayatori_leader 1\n"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace ayatori::obs
