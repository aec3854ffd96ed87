#include "sinks/influxdb/write_error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace seedance::sinks {
namespace {

InfluxWriteError Parse(std::string_view body, std::set<std::string> lines) {
  size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.size());
  return ParseInfluxWriteError(body, longest,
                               [&](std::string_view l) { return lines.count(std::string(l)) > 0; });
}

// The answers below are influxd 1.6's, as it sent them.
TEST(InfluxWriteErrorTest, NamesEveryUnparsableLineWithItsReason) {
  const auto e = Parse(
      R"({"error":"partial write: unable to parse 'bad line here': invalid field format\nunable to parse 'm2 x=1i,y= 4': missing field value dropped=0"})",
      {"bad line here", "m2 x=1i,y= 4", "m v=1 1"});
  ASSERT_EQ(e.unparsed.size(), 2u);
  EXPECT_EQ(e.unparsed[0].line, "bad line here");
  EXPECT_EQ(e.unparsed[0].why, "invalid field format");
  EXPECT_EQ(e.unparsed[1].line, "m2 x=1i,y= 4");
  EXPECT_EQ(e.unparsed[1].why, "missing field value");
  EXPECT_EQ(e.mentions, 2u);
  EXPECT_EQ(e.dropped, 0u);
}

TEST(InfluxWriteErrorTest, ALineHoldingTheQuoteAndColonIsFoundWhole) {
  const auto e = Parse(R"({"error":"unable to parse 'm s=\"a': b\" 1': invalid boolean"})",
                       {"m s=\"a': b\" 1"});
  ASSERT_EQ(e.unparsed.size(), 1u);
  EXPECT_EQ(e.unparsed[0].line, "m s=\"a': b\" 1");
  EXPECT_EQ(e.unparsed[0].why, "invalid boolean");
  EXPECT_FALSE(e.dropped.has_value());
}

TEST(InfluxWriteErrorTest, ATypeConflictNamesNoLineButCountsTheDropped) {
  const auto e = Parse(
      R"({"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type float dropped=3"})",
      {"m v=\"s\" 5"});
  EXPECT_TRUE(e.unparsed.empty());
  EXPECT_EQ(e.dropped, 3u);
  EXPECT_NE(e.message.find("field type conflict"), std::string::npos);
}

TEST(InfluxWriteErrorTest, AQuotedLineThatWasNotSentIsCountedNotNamed) {
  const auto e = Parse(R"({"error":"unable to parse 'other': x"})", {"mine"});
  EXPECT_TRUE(e.unparsed.empty());
  EXPECT_EQ(e.mentions, 1u);
}

// A hostile server's 1 MiB answer of quotes: every "': " after every quote is a candidate.
// The longest line sent and a budget bound the work; past the budget the answer is
// incomplete (the sink then halves the batch instead of trusting it).
TEST(InfluxWriteErrorTest, AnAnswerMadeOfQuotesCostsABoundedAmountOfWork) {
  std::string body;
  while (body.size() < (1 << 20)) body += "unable to parse '': ";
  size_t calls = 0, bytes = 0;
  const auto e = ParseInfluxWriteError(body, 1 << 20, [&](std::string_view l) {
    ++calls;
    bytes += l.size();
    return false;
  });
  EXPECT_TRUE(e.incomplete);
  EXPECT_LE(bytes, kInfluxParseBudgetBytes);
  // With short lines sent, each quote tries only the ends within the longest line.
  calls = 0;
  const auto short_lines = ParseInfluxWriteError(body, 64, [&](std::string_view) {
    ++calls;
    return false;
  });
  EXPECT_FALSE(short_lines.incomplete);
  EXPECT_LE(calls, 4 * short_lines.mentions);
}

TEST(InfluxWriteErrorTest, V2MessagesAndBodiesThatAreNotJson) {
  EXPECT_EQ(Parse(R"({"code":"invalid","message":"no data"})", {}).message, "no data");
  EXPECT_EQ(Parse("gateway broke\n", {}).message, "gateway broke\\n");
  EXPECT_EQ(Parse("", {}).message, "");
}

}  // namespace
}  // namespace seedance::sinks
