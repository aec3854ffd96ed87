#include "storage/record_scanner.h"

#include <gtest/gtest.h>

#include "util/crc32c.h"

#include <string>

namespace seedance::storage {
namespace {

std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (!out.empty()) out += ' ';
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

TEST(Crc32cTest, HardwareAndSoftwarePathsAgree) {
  if (!util::internal::HaveHardware()) GTEST_SKIP() << "no SSE4.2 crc32 on this CPU";
  std::string data;
  for (int i = 0; i < 1000; ++i) {
    data.push_back(static_cast<char>(i * 37 + 11));
    std::string_view v(data);
    ASSERT_EQ(util::internal::ExtendHardware(0xFFFFFFFFu, v),
              util::internal::ExtendSoftware(0xFFFFFFFFu, v))
        << i;
  }
}

#if defined(__x86_64__)
TEST(Crc32cTest, TheOneCpuidCheckAgreesWithTheCompilersCpuModel) {
  EXPECT_EQ(util::internal::HaveHardware(), __builtin_cpu_supports("sse4.2") != 0);
}
#endif

TEST(Crc32cTest, TheHeaderFormIsTheCrcOfBothParts) {
  std::string bytes;
  for (int i = 0; i < 20; ++i) bytes.push_back(static_cast<char>(i * 29 + 3));
  EXPECT_EQ(
      util::Crc32c16And4(bytes.data(), bytes.data() + 16),
      util::Crc32c(std::string_view(bytes).substr(0, 16), std::string_view(bytes).substr(16)));
  EXPECT_EQ(util::Crc32c16And4(bytes.data(), bytes.data() + 16), util::Crc32c(bytes));
}

TEST(Crc32cTest, MatchesTheStandardCheckValue) {
  EXPECT_EQ(util::Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(util::UnmaskCrc(util::MaskCrc(0x12345678u)), 0x12345678u);
}

// The worked example of docs/formats/queue-log.md.
TEST(RecordScannerTest, EncodesTheDocumentedExampleByteForByte) {
  std::string out;
  EncodeRecord(1, 0, "hello", out);
  EXPECT_EQ(Hex(out),
            "ce d1 ed 5e 05 00 00 00 01 00 00 00 00 00 00 00 c7 98 98 5c bb 1f 1c 19 00 01 00 00 "
            "68 65 6c 6c 6f");
  size_t pos = 0, skipped = 0;
  ScannedRecord r;
  ASSERT_EQ(ScanRecord(out, &pos, &r, &skipped), ScanResult::kRecord);
  EXPECT_EQ(r.sequence, 1u);
  EXPECT_EQ(r.payload, "hello");
  EXPECT_EQ(pos, out.size());
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 3) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

// Records written before 0.3: flags 0, the header CRC over bytes 0-15 only.
TEST(RecordScannerTest, ReadsRecordsWhoseHeaderCrcDoesNotCoverTheTag) {
  const std::string old = FromHex(
      "ce d1 ed 5e 05 00 00 00 01 00 00 00 00 00 00 00 c2 ce ee bf bb 1f 1c 19 00 00 00 00 "
      "68 65 6c 6c 6f ");
  size_t pos = 0, skipped = 0;
  ScannedRecord r;
  ASSERT_EQ(ScanRecord(old, &pos, &r, &skipped), ScanResult::kRecord);
  EXPECT_EQ(r.payload, "hello");
}

// A flipped tag would send the record to another output without a word: the header CRC
// covers it, so it is damage (skipped and counted) instead.
TEST(RecordScannerTest, ADamagedTagOrFlagsFailsTheHeaderCrc) {
  for (size_t at : {24u, 25u, 26u, 27u}) {
    std::string out;
    EncodeRecord(7, 0, "payload", out);
    out[at] = static_cast<char>(out[at] ^ 0x01);
    size_t pos = 0, skipped = 0;
    ScannedRecord r;
    EXPECT_NE(ScanRecord(out, &pos, &r, &skipped), ScanResult::kRecord) << "byte " << at;
  }
}

TEST(RecordScannerTest, ResynchronizesAfterGarbage) {
  std::string out = "garbage!";
  EncodeRecord(9, 2, "after", out);
  size_t pos = 0, skipped = 0;
  ScannedRecord r;
  ASSERT_EQ(ScanRecord(out, &pos, &r, &skipped), ScanResult::kCorruption);
  EXPECT_EQ(skipped, 8u);
  ASSERT_EQ(ScanRecord(out, &pos, &r, &skipped), ScanResult::kRecord);
  EXPECT_EQ(r.sequence, 9u);
  EXPECT_EQ(r.tag, 2);
}

}  // namespace
}  // namespace seedance::storage
