#include "sources/tail/line_splitter.h"

#include <gtest/gtest.h>

#include <vector>

namespace seedance::sources {
namespace {

using Kind = LinePiece::Kind;

struct Taken {
  Kind kind;
  std::string text;
  uint64_t end;
  uint64_t line_no;
  bool operator==(const Taken&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Taken& t) {
  return os << static_cast<int>(t.kind) << " \"" << t.text << "\" end " << t.end << " line "
            << t.line_no;
}

void Feed(LineSplitter& s, std::string_view bytes) { s.Append(bytes.data(), bytes.size()); }

std::vector<Taken> TakeAll(LineSplitter& s) {
  std::vector<Taken> out;
  while (auto p = s.Peek()) {
    out.push_back(Taken{p->kind, std::string(p->text), p->end, p->line_no});
    s.Take();
  }
  s.Compact();
  return out;
}

TEST(LineSplitterTest, LinesEndWhereTheirNewlineIsAndWaitForIt) {
  LineSplitter s(100);
  s.Restart(1000);  // resuming at a stored position
  Feed(s, "one\r\ntwo\n  \t\nthr");
  EXPECT_EQ(TakeAll(s), (std::vector<Taken>{{Kind::kLine, "one", 1005, 1},
                                            {Kind::kLine, "two", 1009, 2},
                                            {Kind::kDone, "", 1013, 3}}));
  EXPECT_FALSE(s.empty());  // "thr" waits for its newline
  Feed(s, "ee\n");
  EXPECT_EQ(TakeAll(s), (std::vector<Taken>{{Kind::kLine, "three", 1019, 4}}));
  EXPECT_TRUE(s.empty());
}

TEST(LineSplitterTest, APieceNotTakenIsOfferedAgain) {
  LineSplitter s(100);
  Feed(s, "a\nb\n");
  auto first = s.Peek();
  ASSERT_TRUE(first.has_value());
  // Refused (the pipeline is full): not taken.
  auto again = s.Peek();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->text, "a");
  EXPECT_EQ(again->line_no, 1u);
  s.Take();
  EXPECT_EQ(s.Peek()->text, "b");
}

TEST(LineSplitterTest, ALineTooLongIsReportedOnceAndTheRestDroppedAsItArrives) {
  LineSplitter s(8);
  Feed(s, "ok\n0123456789");  // over max_line before its newline
  EXPECT_EQ(TakeAll(s),
            (std::vector<Taken>{{Kind::kLine, "ok", 3, 1}, {Kind::kTooLong, "0123456789", 13, 2}}));
  EXPECT_TRUE(s.empty());
  for (int i = 0; i < 1000; ++i) {
    Feed(s, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    EXPECT_EQ(TakeAll(s), std::vector<Taken>{});
    EXPECT_TRUE(s.empty());  // never buffered
  }
  Feed(s, "yy\nnext\n");
  EXPECT_EQ(TakeAll(s), (std::vector<Taken>{{Kind::kDone, "", 13 + 32000 + 3, 2},
                                            {Kind::kLine, "next", 13 + 32000 + 8, 3}}));
}

TEST(LineSplitterTest, ALineTooLongWithItsNewlineKeepsItsOwnBytesOnly) {
  // Regression: the kept head of a too long line used to run on into the lines after it.
  LineSplitter s(4);
  Feed(s, "123456\nab\n");
  EXPECT_EQ(TakeAll(s),
            (std::vector<Taken>{{Kind::kTooLong, "123456", 7, 1}, {Kind::kLine, "ab", 10, 2}}));
  LineSplitter big(2000);
  Feed(big, std::string(3000, 'z') + "\n");
  auto p = big.Peek();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->kind, Kind::kTooLong);
  EXPECT_EQ(p->text.size(), LineSplitter::kTooLongKept);
}

TEST(LineSplitterTest, RestartForgetsHeldBytesAndASkipButCountsOn) {
  LineSplitter s(4);
  Feed(s, "a\n0123456789");
  TakeAll(s);    // line 1, and a too long line 2 being skipped
  s.Restart(0);  // the file was truncated
  Feed(s, "new\n");
  EXPECT_EQ(TakeAll(s), (std::vector<Taken>{{Kind::kLine, "new", 4, 2}}));
}

}  // namespace
}  // namespace seedance::sources
