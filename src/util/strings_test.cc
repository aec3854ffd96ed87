#include "util/strings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "util/log.h"

namespace seedance::util {
namespace {

TEST(Utf8Test, AcceptsWellFormedAndRefusesEveryMalformedKind) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf"));
  EXPECT_FALSE(IsValidUtf8("\xff"));              // never valid
  EXPECT_FALSE(IsValidUtf8("\x80"));              // lone continuation
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated
}

TEST(HexTest, DecodesWhatItEncodesAndRefusesTheRest) {
  std::string hex;
  AppendHex(hex, std::string("\x00\xab\x7f", 3));
  EXPECT_EQ(hex, "00ab7f");
  std::string bytes;
  ASSERT_TRUE(DecodeHex("00AB7f", &bytes));
  EXPECT_EQ(bytes, std::string("\x00\xab\x7f", 3));
  EXPECT_FALSE(DecodeHex("abc", &bytes));
  EXPECT_FALSE(DecodeHex("zz", &bytes));
}

TEST(Base64Test, EncodesAcrossSliceBoundaries) {
  std::string out;
  AppendBase64(out, "any carnal pleas");
  EXPECT_EQ(out, "YW55IGNhcm5hbCBwbGVhcw==");
  std::string big(3 * 4096 + 1, 'a');
  out.clear();
  AppendBase64(out, big);
  EXPECT_EQ(out.size(), 4 * ((big.size() + 2) / 3));
  EXPECT_EQ(out.substr(out.size() - 4), "YQ==");
}

TEST(Base64Test, DecodesWhatItEncodesAndRefusesTheRest) {
  for (std::string bytes : {std::string(), std::string("a"), std::string("ab"), std::string("abc"),
                            std::string("\x00\xff\x10"
                                        "binary",
                                        9)}) {
    std::string text, back;
    AppendBase64(text, bytes);
    ASSERT_TRUE(DecodeBase64(text, &back)) << text;
    EXPECT_EQ(back, bytes);
  }
  std::string out;
  EXPECT_FALSE(DecodeBase64("abc", &out));   // not a multiple of 4
  EXPECT_FALSE(DecodeBase64("ab!d", &out));  // not the alphabet
}

TEST(SanitizeTextTest, EscapesControlsAndCutsLongText) {
  EXPECT_EQ(SanitizeText("a\nb\r\tc\x1b[2J\x7f", 100), "a\\nb\\r\\tc\\x1b[2J\\x7f");
  EXPECT_EQ(SanitizeText("caf\xc3\xa9 \xff", 100), "caf\xc3\xa9 \\xff");
  EXPECT_EQ(SanitizeText(std::string(50, 'x'), 10), std::string(10, 'x') + "... (40 more bytes)");
}

// Reads what LogLine writes to stderr.
std::string CaptureLog(const std::string& message) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  const int saved = dup(STDERR_FILENO);
  dup2(fds[1], STDERR_FILENO);
  close(fds[1]);
  LogLine(LogLevel::kError, "comp\nonent", message);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  return out;
}

TEST(LogLineTest, OutsideTextCannotForgeLinesOrGrowALine) {
  std::string line = CaptureLog("boom\n2026-01-01T00:00:00.000Z INFO  [pipeline] forged\x1b[31m");
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;  // one line
  EXPECT_NE(line.find("[comp\\nonent] boom\\n2026-"), std::string::npos) << line;
  EXPECT_NE(line.find("forged\\x1b[31m"), std::string::npos) << line;

  line = CaptureLog(std::string(1 << 20, 'y'));
  EXPECT_LT(line.size(), kMaxLogMessageBytes + 200);
  EXPECT_NE(line.find("... (" + std::to_string((1 << 20) - kMaxLogMessageBytes) + " more bytes)"),
            std::string::npos);
}

}  // namespace
}  // namespace seedance::util
