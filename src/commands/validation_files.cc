#include "commands/validation_files.h"

#include <filesystem>

namespace stagecraft {

Result<std::vector<std::string>> SuiteFiles(const std::vector<std::string>& paths,
                                            const std::string& extension, const std::string& what,
                                            const std::string& expected) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      for (const auto& entry : std::filesystem::directory_iterator(path, error)) {
        if (entry.path().extension() == extension) files.push_back(entry.path().string());
      }
    } else if (std::filesystem::is_regular_file(path, error)) {
      files.push_back(path);
    } else {
      return Error{what + ": cannot read '" + path + "': no such file or folder (expected " +
                   expected + " or a " + extension + " of it)"};
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::string named;
    for (const std::string& path : paths) named += (named.empty() ? "'" : ", '") + path + "'";
    return Error{what + ": no " + extension + " files in " + named + " (expected " + expected +
                 " or " + extension + " files of its kind; give their folder or the files)"};
  }
  return files;
}

}  // namespace stagecraft
