#include "pipetest/expect.h"

#include <gtest/gtest.h>

namespace seedance::pipetest {
namespace {

Emitted Out(std::string output, std::string payload, std::string reason = "") {
  Emitted e;
  e.output = std::move(output);
  e.reason = std::move(reason);
  e.event.payload = std::move(payload);
  e.event.topic = "t";
  return e;
}

Expected Want(std::string payload, bool subset = false) {
  Expected e;
  e.payload = std::move(payload);
  e.subset = subset;
  return e;
}

TEST(ExpectTest, PayloadsCompareAsJson) {
  EXPECT_FALSE(Mismatch(Want(R"({"a":1,"b":[1,2]})"), Out("main", R"({ "b": [1, 2], "a": 1.0 })")));
  EXPECT_EQ(Mismatch(Want(R"({"a":1})"), Out("main", R"({"a":2})")), "field a: expected 1, got 2");
  EXPECT_EQ(Mismatch(Want(R"({"a":1})"), Out("main", R"({"a":1,"b":2})")),
            "field b: not expected (2)");
  EXPECT_EQ(Mismatch(Want(R"({"a":1,"c":3})"), Out("main", R"({"a":1})")), "field c missing");
  EXPECT_EQ(Mismatch(Want("[1,2]"), Out("main", "[2,1]")), "payload: expected [1,2], got [2,1]");
  // Not JSON on either side: the bytes.
  Expected raw = Want("raw text");
  raw.output = "error";
  EXPECT_FALSE(Mismatch(raw, Out("error", "raw text")));
  EXPECT_TRUE(Mismatch(raw, Out("error", "raw text!")));
}

TEST(ExpectTest, SubsetLooksOnlyAtTheFieldsGivenNestedToo) {
  EXPECT_FALSE(Mismatch(Want(R"({"a":1,"m":{"x":1}})", true),
                        Out("main", R"({"a":1,"b":2,"m":{"x":1,"y":2}})")));
  EXPECT_EQ(Mismatch(Want(R"({"m":{"x":2}})", true), Out("main", R"({"m":{"x":1}})")),
            "field m.x: expected 2, got 1");
}

TEST(ExpectTest, OutputTopicAndReason) {
  Expected e;
  e.output = "stale";
  e.reason = "behind";
  e.topic = "t";
  EXPECT_EQ(Mismatch(e, Out("main", "{}")), "output: expected stale, got main");
  EXPECT_EQ(Mismatch(e, Out("stale", "{}", "too late")),
            "reason: expected one containing \"behind\", got \"too late\"");
  EXPECT_FALSE(Mismatch(e, Out("stale", "{}", "541 s behind the watermark")));
  e.topic = "u";
  EXPECT_EQ(Mismatch(e, Out("stale", "{}", "behind")), "topic: expected u, got t");
}

TEST(ExpectTest, FieldConditions) {
  Expected e;
  e.where = {
      {"n", ">", "3"}, {"n", "<=", "5"}, {"m.s", "==", "\"x\""}, {"gone", "exists", "false"}};
  EXPECT_FALSE(Mismatch(e, Out("main", R"({"n":5,"m":{"s":"x"}})")));
  EXPECT_EQ(Mismatch(e, Out("main", R"({"n":3,"m":{"s":"x"}})")), "field n: 3 is not > 3");
  EXPECT_EQ(Mismatch(e, Out("main", R"({"n":4,"m":{"s":"y"}})")),
            "field m.s: \"y\" is not == \"x\"");
  EXPECT_EQ(Mismatch(e, Out("main", R"({"n":4,"m":{"s":"x"},"gone":1})")), "field gone present");
  EXPECT_EQ(Mismatch(e, Out("main", R"({"m":{"s":"x"}})")), "field n missing (wanted > 3)");
  EXPECT_EQ(Mismatch(e, Out("main", "not json")), "payload: not JSON, fields cannot be checked");
}

TEST(ExpectTest, TheDiffShowsEachPositionAndWhy) {
  std::vector<Expected> want = {Want(R"({"a":1})"), Want(R"({"a":2})")};
  EXPECT_EQ(Diff(want, {Out("main", R"({"a":1})"), Out("main", R"({"a":2})")}), "");
  const std::string d =
      Diff(want, {Out("main", R"({"a":1})"), Out("main", R"({"a":3})"), Out("error", "x", "boom")});
  EXPECT_EQ(d,
            "expected 2 event(s), got 3:\n"
            "      [0] main {\"a\":1}\n"
            "    - [1] main {\"a\":2}\n"
            "    + [1] main {\"a\":3}\n"
            "          field a: expected 2, got 3\n"
            "    + [2] error x (reason: boom)    (not expected)\n");
  EXPECT_EQ(Diff({}, {}), "");
  EXPECT_EQ(Diff(want, {}),
            "expected 2 event(s), got 0:\n"
            "    - [0] main {\"a\":1}    (missing)\n"
            "    - [1] main {\"a\":2}    (missing)\n");
}

}  // namespace
}  // namespace seedance::pipetest
