// The file system as the run library sees it: reading whole text files and writing outputs all
// or nothing. A caller injects it (RunSpec::files); LocalFiles() is the local disk, and a test
// or an embedding (the Python module) can hand in files of its own. Errors name the path and
// what to check.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/result.h"

namespace stagecraft {

// One output file: where it goes and its whole text.
struct FileToWrite {
  std::string path;
  std::string text;
};

struct Files {
  std::function<Result<std::string>(const std::string& path)> read;
  // Writes every file of one output or none of them (an export's files, a report with them).
  std::function<Status(const std::vector<FileToWrite>& files)> write_all;

  // One file: write_all of it alone.
  Status write(const std::string& path, const std::string& text) const {
    return write_all({FileToWrite{path, text}});
  }
};

// The local file system: a directory, a device or a missing file is an error naming the path.
const Files& LocalFiles();

Result<std::string> ReadTextFile(const std::string& path);

// Each file goes to a temporary name in its own folder, and only when every one is complete
// are they renamed over their targets; a failure (a full disk, no permission, a directory of
// that name, a folder that does not exist) removes the temporaries and leaves every target as
// it was. A target that exists and is not a regular file (/dev/null, /dev/full, a pipe) cannot
// be renamed over: it is written in place, after the temporaries, and every write is checked.
Status WriteTextFiles(const std::vector<FileToWrite>& files);
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace stagecraft
