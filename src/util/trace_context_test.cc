#include "util/trace_context.h"

#include <gtest/gtest.h>

namespace seedance::util {
namespace {

TEST(TraceContextTest, ReadsTheSpecsExample) {
  auto c = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id[0], 0x4b);
  EXPECT_EQ(c->trace_id[15], 0x36);
  EXPECT_EQ(c->span_id[0], 0x00);
  EXPECT_EQ(c->span_id[7], 0xb7);
  EXPECT_EQ(c->flags, 1);
  // A later version with a field appended.
  EXPECT_TRUE(
      ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future")
          .has_value());
}

TEST(TraceContextTest, WhatTheSpecSaysToIgnoreIsIgnored) {
  for (const char* bad :
       {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",  // v00 with more
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",   // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",   // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",   // zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // version ff
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0x",   // flags not hex
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",   // separator
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",  // no '-' before more
        "", "00-4bf9"}) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
  Event e;
  EXPECT_FALSE(EventTraceContext(e).has_value());
  e.SetHeader("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  EXPECT_TRUE(EventTraceContext(e).has_value());
}

TEST(TraceContextTest, FormatWritesWhatParseReads) {
  const char* text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto c = ParseTraceparent(text);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(c->sampled());
  EXPECT_EQ(FormatTraceparent(*c), text);
  c->flags = 0;
  EXPECT_FALSE(c->sampled());
  EXPECT_EQ(FormatTraceparent(*c), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
}

}  // namespace
}  // namespace seedance::util
