#include "obs/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

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
  EXPECT_EQ(r.Render(),
            "# HELP lat_seconds latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{adapter=\"docker\",le=\"0.1\"} 1\n"
            "lat_seconds_bucket{adapter=\"docker\",le=\"1\"} 2\n"
            "lat_seconds_bucket{adapter=\"docker\",le=\"+Inf\"} 3\n"
            "lat_seconds_sum{adapter=\"docker\"} 5.55\n"
            "lat_seconds_count{adapter=\"docker\"} 3\n");
}

// Bounds, sums, counters and gauges print as the Go client prints them
// (strconv.FormatFloat(v, 'g', -1, 64)), which is what Prometheus users see everywhere.
TEST(MetricsTest, DefaultBucketBoundsPrintInTheirShortestForm) {
  Registry r;
  r.GetHistogram("d_seconds", "durations").Observe(0.003);
  const std::string text = r.Render();
  for (const char* bound : {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25",
                            "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"}) {
    EXPECT_NE(text.find("le=\"" + std::string(bound) + "\"}"), std::string::npos)
        << bound << " in\n"
        << text;
  }
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
  EXPECT_NE(text.find("d_seconds_sum 0.003\n"), std::string::npos) << text;
}

TEST(MetricsTest, FormatFloatMatchesGoShortestFormatting) {
  EXPECT_EQ(FormatFloat(0), "0");
  EXPECT_EQ(FormatFloat(-0.0), "0");
  EXPECT_EQ(FormatFloat(1), "1");
  EXPECT_EQ(FormatFloat(-1), "-1");
  EXPECT_EQ(FormatFloat(0.0025), "0.0025");
  EXPECT_EQ(FormatFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatFloat(5.55), "5.55");
  EXPECT_EQ(FormatFloat(123456), "123456");
  EXPECT_EQ(FormatFloat(1e6), "1e+06");
  EXPECT_EQ(FormatFloat(1234567), "1.234567e+06");
  EXPECT_EQ(FormatFloat(-2.5e7), "-2.5e+07");
  EXPECT_EQ(FormatFloat(1e100), "1e+100");
  EXPECT_EQ(FormatFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatFloat(0.00001), "1e-05");
  EXPECT_EQ(FormatFloat(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatFloat(1.7976931348623157e308), "1.7976931348623157e+308");
  EXPECT_EQ(FormatFloat(5e-324), "5e-324");
  EXPECT_EQ(FormatFloat(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatFloat(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatFloat(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(MetricsTest, LargeCountsAndGaugesRenderExactly) {
  Registry r;
  r.GetCounter("events_total", "Events.").Inc(2500000);
  r.GetGauge("ratio", "A ratio.").Set(0.75);
  r.GetGauge("neg", "Negative.").Set(-3);
  EXPECT_EQ(r.Render(),
            "# HELP events_total Events.\n"
            "# TYPE events_total counter\n"
            "events_total 2.5e+06\n"
            "# HELP neg Negative.\n"
            "# TYPE neg gauge\n"
            "neg -3\n"
            "# HELP ratio A ratio.\n"
            "# TYPE ratio gauge\n"
            "ratio 0.75\n");
}

TEST(MetricsTest, CollectorsRefreshGaugesAtRenderTime) {
  Registry r;
  int calls = 0;
  r.AddCollector([&](Registry& reg) { reg.GetGauge("g", "help").Set(++calls); });
  EXPECT_NE(r.Render().find("g 1\n"), std::string::npos);
  EXPECT_NE(r.Render().find("g 2\n"), std::string::npos);
}

TEST(MetricsTest, LabelValuesAndHelpTextAreEscaped) {
  Registry r;
  r.GetCounter("c", "Counts \"quoted\" things\\paths\nacross lines.", {{"reason", "a\"b\\c\nd"}})
      .Inc();
  // HELP escapes backslash and newline only; label values also escape the double quote.
  EXPECT_EQ(r.Render(),
            "# HELP c Counts \"quoted\" things\\\\paths\\nacross lines.\n"
            "# TYPE c counter\n"
            "c{reason=\"a\\\"b\\\\c\\nd\"} 1\n");
}

}  // namespace
}  // namespace ayatori::obs
