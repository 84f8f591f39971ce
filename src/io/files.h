// The file system as the run library sees it: reading and writing whole text files. A caller
// injects it (RunSpec::files); LocalFiles() is the local disk, and a test or an embedding (the
// Python module) can hand in files of its own. Errors name the path and what to check.
#pragma once

#include <functional>
#include <string>

#include "core/result.h"

namespace stagecraft {

struct Files {
  std::function<Result<std::string>(const std::string& path)> read;
  std::function<Status(const std::string& path, const std::string& text)> write;
};

// The local file system: a directory, a device or a missing file is an error naming the path.
const Files& LocalFiles();

Result<std::string> ReadTextFile(const std::string& path);
Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace stagecraft
