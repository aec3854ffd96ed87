// Saved positions (cursors, HEAD): two slots overwritten in place, the newest valid one read,
// the older forms still read, no file created or renamed per save.
#include "storage/cursor_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "storage/record_scanner.h"
#include "testing/fault_file_system.h"

namespace seedance::storage {
namespace {

namespace fs = std::filesystem;
using seedance::testing::FaultFileSystem;

class CursorFileTest : public ::testing::Test {
 protected:
  CursorFileTest() {
    dir_ = (fs::temp_directory_path() /
            ("cursor_file_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = dir_ + "/out";
  }
  ~CursorFileTest() override { fs::remove_all(dir_); }

  CursorFile Read(uint64_t* position, uint64_t* generation = nullptr) {
    return ReadCursorFile(PosixFileSystem(), path_, position, generation);
  }
  std::string Bytes() const {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }
  void Overwrite(size_t offset, std::string_view bytes) {
    std::fstream f(path_, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // The sequence of the record at `offset`, or -1 when there is none.
  int64_t RecordAt(size_t offset) const {
    const std::string bytes = Bytes();
    if (offset >= bytes.size()) return -1;
    size_t pos = offset;
    ScannedRecord record;
    size_t skipped = 0;
    if (ScanRecord(bytes, &pos, &record, &skipped) != ScanResult::kRecord ||
        record.offset != offset) {
      return -1;
    }
    return static_cast<int64_t>(record.sequence);
  }

  std::string dir_;
  std::string path_;
};

TEST_F(CursorFileTest, SavesAlternateBetweenTwoSlotsAndTheNewestIsRead) {
  CursorWriter writer(PosixFileSystem(), path_);
  uint64_t position = 0, generation = 0;
  EXPECT_EQ(Read(&position), CursorFile::kMissing);
  ASSERT_TRUE(writer.Write(10));
  EXPECT_EQ(RecordAt(0), 10);
  EXPECT_EQ(RecordAt(kCursorSlotStride), -1);
  ASSERT_TRUE(writer.Write(20));
  EXPECT_EQ(RecordAt(0), 10);  // the older slot was overwritten, not the newest
  EXPECT_EQ(RecordAt(kCursorSlotStride), 20);
  ASSERT_TRUE(writer.Write(30));
  EXPECT_EQ(RecordAt(0), 30);
  EXPECT_EQ(RecordAt(kCursorSlotStride), 20);
  ASSERT_EQ(Read(&position, &generation), CursorFile::kOk);
  EXPECT_EQ(position, 30u);
  EXPECT_EQ(generation, 3u);
}

TEST_F(CursorFileTest, TheGenerationNotTheLargerPositionDecides) {
  {
    CursorWriter writer(PosixFileSystem(), path_);
    ASSERT_TRUE(writer.Write(500));
    ASSERT_TRUE(writer.Write(7));  // a position may move back (a clamped one)
  }
  uint64_t position = 0;
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 7u);
}

TEST_F(CursorFileTest, ANewWriterContinuesAfterTheNewestSlotAndOverwritesTheOther) {
  {
    CursorWriter writer(PosixFileSystem(), path_);
    ASSERT_TRUE(writer.Write(10));
    ASSERT_TRUE(writer.Write(20));  // slot 1, generation 2
  }
  CursorWriter writer(PosixFileSystem(), path_);
  ASSERT_TRUE(writer.Write(30));
  EXPECT_EQ(RecordAt(0), 30);                  // generation 3 in slot 0
  EXPECT_EQ(RecordAt(kCursorSlotStride), 20);  // the newest before it kept
  uint64_t position = 0, generation = 0;
  ASSERT_EQ(Read(&position, &generation), CursorFile::kOk);
  EXPECT_EQ(position, 30u);
  EXPECT_EQ(generation, 3u);
}

TEST_F(CursorFileTest, ATornSlotLeavesTheOlderPosition) {
  CursorWriter writer(PosixFileSystem(), path_);
  ASSERT_TRUE(writer.Write(10));
  ASSERT_TRUE(writer.Write(20));
  Overwrite(kCursorSlotStride + 20, "\xff\xff\xff");  // the newest slot, torn
  uint64_t position = 0;
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 10u);
  Overwrite(5, "\xff\xff\xff");  // both torn
  EXPECT_EQ(Read(&position), CursorFile::kDamaged);
}

TEST_F(CursorFileTest, TheFormsWrittenBeforeAreReadAndKeptUntilANewerSlotIsWhole) {
  std::string single;
  EncodeRecord(42, 0, {}, single);  // by earlier builds: one record, empty payload
  {
    std::ofstream out(path_, std::ios::binary);
    out << single;
  }
  uint64_t position = 0, generation = 9;
  ASSERT_EQ(Read(&position, &generation), CursorFile::kOk);
  EXPECT_EQ(position, 42u);
  EXPECT_EQ(generation, 0u);
  CursorWriter writer(PosixFileSystem(), path_);
  ASSERT_TRUE(writer.Write(50));
  EXPECT_EQ(RecordAt(0), 42);  // still there: the fallback if the new slot tears
  EXPECT_EQ(RecordAt(kCursorSlotStride), 50);
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 50u);
  Overwrite(kCursorSlotStride + 20, "\xff\xff\xff");
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 42u);

  {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << "6\n";  // before 0.3
  }
  ASSERT_EQ(Read(&position), CursorFile::kText);
  EXPECT_EQ(position, 6u);
  {
    std::ofstream out(path_, std::ios::binary | std::ios::trunc);
    out << "6x\n";
  }
  EXPECT_EQ(Read(&position), CursorFile::kDamaged);
}

TEST_F(CursorFileTest, ADamagedFileIsRepairedByTheFirstSaveWhateverItsSize) {
  for (const size_t size : {size_t{100}, kCursorSlotStride + 100, size_t{3} * kCursorSlotStride}) {
    {
      std::ofstream out(path_, std::ios::binary | std::ios::trunc);
      out << std::string(size, '\xa5');
    }
    uint64_t position = 0;
    ASSERT_EQ(Read(&position), CursorFile::kDamaged) << size;
    {
      CursorWriter writer(PosixFileSystem(), path_);
      ASSERT_TRUE(writer.Write(7)) << size;
    }
    ASSERT_EQ(Read(&position), CursorFile::kOk) << size;
    EXPECT_EQ(position, 7u) << size;
    CursorWriter writer(PosixFileSystem(), path_);  // a later start keeps both slots
    ASSERT_TRUE(writer.Write(8)) << size;
    EXPECT_EQ(RecordAt(0), 7) << size;
    EXPECT_EQ(RecordAt(kCursorSlotStride), 8) << size;
  }
}

TEST_F(CursorFileTest, ASaveIsOneWriteInPlaceWithNoFileCreatedOrRenamed) {
  FaultFileSystem faults(dir_);
  CursorWriter writer(faults, path_);
  ASSERT_TRUE(writer.Write(1));  // creates the file: open, write
  ASSERT_TRUE(writer.Write(2));
  const uint64_t before = faults.operations();
  for (uint64_t p = 3; p < 13; ++p) ASSERT_TRUE(writer.Write(p));
  EXPECT_EQ(faults.operations() - before, 10u);  // one mutating operation per save
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "out");  // no temporary file
  }
}

TEST_F(CursorFileTest, ASaveNeedsNoFreeSpaceOnceBothSlotsExist) {
  FaultFileSystem faults(dir_);
  CursorWriter writer(faults, path_);
  ASSERT_TRUE(writer.Write(1));
  ASSERT_TRUE(writer.Write(2));
  faults.SetSpaceLimit(0);  // the file system is full
  ASSERT_TRUE(writer.Write(3));
  ASSERT_TRUE(writer.Write(4));
  uint64_t position = 0;
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 4u);
}

TEST_F(CursorFileTest, AFailedSaveIsRetriedAndLeavesTheNewestPosition) {
  FaultFileSystem faults(dir_);
  CursorWriter writer(faults, path_);
  ASSERT_TRUE(writer.Write(1));
  ASSERT_TRUE(writer.Write(2));
  faults.FailNext(FaultFileSystem::Op::kWrite, EIO);
  EXPECT_FALSE(writer.Write(3));
  uint64_t position = 0;
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 2u);
  ASSERT_TRUE(writer.Write(3));  // reopened; the same slot
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 3u);
  EXPECT_EQ(RecordAt(kCursorSlotStride), 2);
}

// Out of descriptors, a new writer cannot read the file: it writes nothing (it would not know
// which slot is older, nor the generation to continue from) and reads it again next time.
TEST_F(CursorFileTest, AFileThatCannotBeReadIsNotWrittenUntilItIsRead) {
  {
    CursorWriter writer(PosixFileSystem(), path_);
    for (uint64_t p = 1; p <= 3; ++p) ASSERT_TRUE(writer.Write(p));  // slot 0 holds 3
  }
  FaultFileSystem faults(dir_);
  uint64_t position = 0;
  std::string why;
  faults.FailNext(FaultFileSystem::Op::kOpen, EMFILE);
  EXPECT_EQ(ReadCursorFile(faults, path_, &position, nullptr, &why), CursorFile::kUnreadable);
  EXPECT_NE(why.find("Too many open files"), std::string::npos) << why;
  CursorWriter writer(faults, path_);
  faults.FailNext(FaultFileSystem::Op::kOpen, EMFILE);
  EXPECT_FALSE(writer.Write(4));
  EXPECT_EQ(RecordAt(0), 3);
  EXPECT_EQ(RecordAt(kCursorSlotStride), 2);
  ASSERT_TRUE(writer.Write(4));  // read now: continues after generation 3, in slot 1
  EXPECT_EQ(RecordAt(0), 3);
  EXPECT_EQ(RecordAt(kCursorSlotStride), 4);
  ASSERT_EQ(Read(&position), CursorFile::kOk);
  EXPECT_EQ(position, 4u);
}

}  // namespace
}  // namespace seedance::storage
