#include "bench/report.h"

#include <cmath>
#include <fstream>
#include <iterator>

#include "gtest/gtest.h"

namespace jobwheel::bench {
namespace {

TEST(PercentilesTest, NearestRankOverOneToHundred) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  Percentiles p = ComputePercentiles(v);
  EXPECT_EQ(p.n, 100u);
  EXPECT_EQ(p.p50, 50);
  EXPECT_EQ(p.p90, 90);
  EXPECT_EQ(p.p99, 99);
  EXPECT_EQ(p.max, 100);
  EXPECT_DOUBLE_EQ(p.mean, 50.5);
}

TEST(PercentilesTest, EmptyAndSingle) {
  std::vector<double> none;
  EXPECT_EQ(ComputePercentiles(none).n, 0u);
  std::vector<double> one = {7};
  Percentiles p = ComputePercentiles(one);
  EXPECT_EQ(p.p50, 7);
  EXPECT_EQ(p.p99, 7);
  EXPECT_EQ(p.max, 7);
}

TEST(ReportTest, LineQuotesTextWithSpacesAndSkipsObjects) {
  Report flags;
  flags.AddText("jobs", "20");
  Report r;
  r.Add("achieved_per_s", 199.6, 0);
  r.Add("lost", int64_t{0});
  r.AddText("mode", "two words");
  r.AddObject("flags", flags);
  EXPECT_EQ(r.Line("peak"), "peak: achieved_per_s=200 lost=0 mode=\"two words\"");
  EXPECT_EQ(r.Json(),
            "{\"achieved_per_s\": 200, \"lost\": 0, \"mode\": \"two words\", "
            "\"flags\": {\"jobs\": \"20\"}}");
}

TEST(ReportTest, JsonEscapesAndWritesNonFiniteAsNull) {
  EXPECT_EQ(JsonString("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
  Report r;
  r.Add("x", std::nan(""), 1);
  EXPECT_EQ(r.Json(), "{\"x\": null}");
}

TEST(ResultsTest, RepeatedNamesGetSuffixes) {
  Results results;
  Report a;
  a.Add("rate", int64_t{1});
  results.Keep("peak_probe", a);
  results.Keep("peak_probe", a);
  const std::string path = ::testing::TempDir() + "/results.json";
  ASSERT_TRUE(results.WriteJson(path).ok());
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\n  \"peak_probe\": {\"rate\": 1},\n  \"peak_probe_2\": {\"rate\": 1}\n}\n");
}

}  // namespace
}  // namespace jobwheel::bench
