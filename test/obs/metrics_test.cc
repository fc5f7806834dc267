#include "obs/metrics.h"

#include <gtest/gtest.h>

namespace ayatori::obs {
namespace {

TEST(MetricsTest, RendersCountersGaugesWithLabelsInTextFormat) {
  Registry r;
  r.GetCounter("ayatori_api_requests_total", "API requests", {{"verb", "GET"}, {"code", "200"}})
      .Inc(3);
  r.GetGauge("ayatori_workqueue_depth", "Queue depth").Set(7);
  std::string text = r.Render();
  EXPECT_NE(text.find("# TYPE ayatori_api_requests_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("ayatori_api_requests_total{verb=\"GET\",code=\"200\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("ayatori_workqueue_depth 7\n"), std::string::npos) << text;
}

TEST(MetricsTest, HistogramBucketsAreCumulativeWithInfSumAndCount) {
  Registry r;
  auto& h = r.GetHistogram("lat_seconds", "latency", {{"adapter", "docker"}}, {0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  std::string text = r.Render();
  EXPECT_NE(text.find("lat_seconds_bucket{adapter=\"docker\",le=\"0.10000000000000001\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("lat_seconds_bucket{adapter=\"docker\",le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{adapter=\"docker\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_count{adapter=\"docker\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_sum{adapter=\"docker\"} 5.5"), std::string::npos);
}

TEST(MetricsTest, CollectorsRefreshGaugesAtRenderTime) {
  Registry r;
  int calls = 0;
  r.AddCollector([&](Registry& reg) { reg.GetGauge("g", "help").Set(++calls); });
  EXPECT_NE(r.Render().find("g 1\n"), std::string::npos);
  EXPECT_NE(r.Render().find("g 2\n"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  Registry r;
  r.GetCounter("c", "help", {{"reason", "a\"b\\c\nd"}}).Inc();
  EXPECT_NE(r.Render().find("c{reason=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos);
}

}  // namespace
}  // namespace ayatori::obs
