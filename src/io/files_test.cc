#include "io/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace stagecraft {
namespace {

namespace fs = std::filesystem;

// A fresh folder per test, removed afterwards.
class WriteTextFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    folder_ = fs::temp_directory_path() /
              ("stagecraft-files-test-" + std::to_string(::getpid()) + "-" + test->name());
    fs::remove_all(folder_);
    fs::create_directories(folder_);
  }
  void TearDown() override { fs::remove_all(folder_); }

  std::string Path(const std::string& name) const { return (folder_ / name).string(); }
  std::string Read(const std::string& name) const {
    std::ifstream stream(Path(name), std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(stream), {});
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(folder_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path folder_;
};

TEST_F(WriteTextFilesTest, WritesEveryFileAndLeavesNoTemporary) {
  ASSERT_TRUE(WriteTextFiles({{Path("a.txt"), "alpha\n"}, {Path("b.txt"), "beta\n"}}).ok());
  EXPECT_EQ(Read("a.txt"), "alpha\n");
  EXPECT_EQ(Read("b.txt"), "beta\n");
  EXPECT_EQ(Names(), (std::vector<std::string>{"a.txt", "b.txt"}));
}

TEST_F(WriteTextFilesTest, ARewriteReplacesTheWholeFile) {
  ASSERT_TRUE(WriteTextFile(Path("a.txt"), "a much longer first text\n").ok());
  ASSERT_TRUE(WriteTextFile(Path("a.txt"), "short\n").ok());
  EXPECT_EQ(Read("a.txt"), "short\n");
}

// Issue 35, D16: a failed export left the files before the failing one written.
TEST_F(WriteTextFilesTest, OneFailureWritesNoneAndKeepsWhatWasThere) {
  ASSERT_TRUE(WriteTextFile(Path("a.txt"), "old\n").ok());
  const Status status = WriteTextFiles(
      {{Path("a.txt"), "new\n"}, {Path("b.txt"), "beta\n"}, {Path("missing/c.txt"), "gamma\n"}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "cannot write '" + Path("missing/c.txt") + "': its folder '" +
                                        Path("missing") +
                                        "' does not exist (create it first; nothing written)");
  EXPECT_EQ(Read("a.txt"), "old\n");
  EXPECT_EQ(Names(), (std::vector<std::string>{"a.txt"}));
}

TEST_F(WriteTextFilesTest, ADirectoryIsNamedAsOne) {
  fs::create_directories(Path("out.csv"));
  const Status status = WriteTextFiles({{Path("a.txt"), "alpha\n"}, {Path("out.csv"), "x\n"}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("'" + Path("out.csv") + "': it is a directory"),
            std::string::npos)
      << status.error().message;
  EXPECT_EQ(Names(), (std::vector<std::string>{"out.csv"}));
}

TEST_F(WriteTextFilesTest, AnEmptyNameIsRefused) {
  const Status status = WriteTextFile("", "x");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "cannot write a file with an empty name (expected a file name)");
}

// Issue 35, D17: a full disk was not noticed. /dev/full fails every write with ENOSPC.
TEST_F(WriteTextFilesTest, AFullDiskIsAnErrorAndRemovesTheTemporaries) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full here";
  const Status status = WriteTextFiles({{Path("a.txt"), "alpha\n"}, {"/dev/full", "x\n"}});
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "cannot write '/dev/full': No space left on device (none of the 2 files written; "
            "free some space on its disk)");
  EXPECT_TRUE(Names().empty());
}

TEST_F(WriteTextFilesTest, ALinkKeepsPointingAtItsFile) {
  ASSERT_TRUE(WriteTextFile(Path("real.txt"), "old\n").ok());
  fs::create_symlink(Path("real.txt"), Path("link.txt"));
  ASSERT_TRUE(WriteTextFile(Path("link.txt"), "new\n").ok());
  EXPECT_TRUE(fs::is_symlink(Path("link.txt")));
  EXPECT_EQ(Read("real.txt"), "new\n");
}

TEST_F(WriteTextFilesTest, FilesWriteIsWriteAllOfOne) {
  std::vector<FileToWrite> seen;
  Files files;
  files.write_all = [&seen](const std::vector<FileToWrite>& batch) {
    seen = batch;
    return Status::Ok();
  };
  ASSERT_TRUE(files.write("x.txt", "text").ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "x.txt");
  EXPECT_EQ(seen[0].text, "text");
}

}  // namespace
}  // namespace stagecraft
